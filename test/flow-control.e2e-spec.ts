import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import type { Publisher } from '@app/streams';
import { PUBLISHER } from '@app/streams';
import { defineWorkflow } from '@nest-durable/workflow';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import request from 'supertest';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS, ExampleWorkflowsModule } from '../apps/worker/src/workflows';
import { type RunningCoordinator, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

const MODES = ['http', 'redis-zset', 'redis-streams'] as const;
type Mode = (typeof MODES)[number];

const echo = { name: 'echo', version: '1' };
const chain = { name: 'chain', version: '1' };
const sleepy = { name: 'sleepy', version: '1' };

/** Declares its limit in code: one run at a time. */
const singleFile = defineWorkflow<{ ms: number }, string>({
  name: 'single-file',
  version: '1',
  limits: { concurrency: 1 },
  handler: async (ctx, input) => {
    await ctx.task('work', () => delay(input.ms));
    return 'done';
  },
});

/** Pause, resume, concurrency and rate limits of workflow versions, in every dispatch mode, against real PostgreSQL and Redis. */
describe('flow control', () => {
  let db: TestDatabase;
  let redis: Redis;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('flow_control');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await db.sql(
      `TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters, engine_settings, workflow_controls, workflow_key_buckets, workflows, workers CASCADE`,
    );
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  /** A coordinator and `workers` workers in `mode` (republish off: every wake-up the tests see was issued on purpose). */
  async function stack(mode: Mode, { workers = 1, concurrency = 10, shards }: { workers?: number; concurrency?: number; shards?: string } = {}) {
    const prefix = testPrefix(`flow-${mode}`);
    const coordinator = await startCoordinator(db.url, {
      dispatch: mode === 'http' ? 'none' : mode,
      redisPrefix: prefix,
      streamPartitions: 2,
      republishIntervalMs: 3_600_000,
    });
    running.push(coordinator);
    for (let i = 0; i < workers; i++) {
      const config = loadWorkerConfig({
        COORDINATOR_URL: coordinator.url,
        SUBSCRIBER: mode,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '500',
        CLAIM_WAIT_MS: '1000',
        WORKER_CONCURRENCY: String(concurrency),
        WORKER_ID: `${mode}-${i}`,
        ...(shards ? { WORKER_SHARDS: shards } : {}),
      });
      running.push(await startCustomWorker(coordinator.url, workerModuleOptions(config, EXAMPLE_WORKFLOWS), [ExampleWorkflowsModule]));
    }
    return { coordinator, client: new WorkflowClient({ url: coordinator.url }) };
  }

  const countWhere = async (where: string, values: unknown[] = []) =>
    Number((await db.sql<{ n: string }>(`SELECT count(*) AS n FROM runs WHERE ${where}`, values))[0].n);
  const allDone = (client: WorkflowClient, runs: RunView[]) => Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 30_000 })));

  /** Wake-ups of `queue` still on their way: in the outbox, or in Redis undelivered. */
  async function wakeupsInFlight(coordinator: RunningCoordinator, queue: string): Promise<number> {
    const [{ n }] = await db.sql<{ n: string }>(`SELECT count(*) AS n FROM outbox WHERE queue = $1 AND status <> 'sent'`, [queue]);
    const publisher = coordinator.app.get<Publisher>(PUBLISHER);
    const undelivered = (await publisher.undelivered([queue])).get(queue) ?? 0;
    return Number(n) + undelivered;
  }

  describe('bad input', () => {
    it('refuses negative or zero limits, a rate given as text and unknown fields with 400 and a reason, changing nothing', async () => {
      const { coordinator } = await stack('http', { workers: 0 });
      const limits = (body: unknown) =>
        request(coordinator.url)
          .put('/v1/workflows/echo/1/limits')
          .send(body as object);
      expect((await limits({ concurrency: -1 }).expect(400)).body).toMatchObject({ reason: 'invalid_concurrency', message: expect.any(String) });
      expect((await limits({ concurrency: 0 }).expect(400)).body).toMatchObject({ reason: 'invalid_concurrency' });
      expect((await limits({ concurrencyPerKey: 1.5 }).expect(400)).body).toMatchObject({ reason: 'invalid_concurrencyPerKey' });
      expect((await limits({ ratePerSecond: -5 }).expect(400)).body).toMatchObject({ reason: 'invalid_ratePerSecond' });
      expect((await limits({ ratePerSecond: '5' }).expect(400)).body).toMatchObject({ reason: 'invalid_ratePerSecond' });
      expect((await limits({ ratePerKeyPerSecond: 0 }).expect(400)).body).toMatchObject({ reason: 'invalid_ratePerKeyPerSecond', message: expect.any(String) });
      expect((await limits({ ratePerKeyPerSecond: 'fast' }).expect(400)).body).toMatchObject({ reason: 'invalid_ratePerKeyPerSecond' });
      expect((await limits({ ratePerKeyPerSecond: 100_001 }).expect(400)).body).toMatchObject({ reason: 'invalid_ratePerKeyPerSecond' });
      expect((await limits({ concurrency: 2, burst: 3 }).expect(400)).body).toMatchObject({ reason: 'unknown_field' });
      const pause = await request(coordinator.url).post('/v1/workflows/echo/1/pause').send({ shard: 'eu', all: true }).expect(400);
      expect(pause.body).toMatchObject({ reason: 'unknown_field' });
      expect((await request(coordinator.url).post('/v1/workflows/ech:o/1/pause').expect(400)).body).toMatchObject({ reason: 'invalid_workflow' });
      expect((await request(coordinator.url).post('/v1/runs').send({ workflow: 'echo', version: '1', concurrencyKey: '' }).expect(400)).body).toMatchObject({
        reason: 'invalid_concurrencyKey',
      });
      expect((await request(coordinator.url).get('/v1/workflows').expect(200)).body).toEqual({ items: [] });
      expect(await db.sql('SELECT * FROM workflow_controls')).toEqual([]);
      expect(await countWhere('true')).toBe(0);
    });
  });

  describe.each(MODES)('%s', (mode) => {
    it('takes no run of a paused version until it is resumed, while other versions flow; running runs finish; the pause shows', async () => {
      const { client, coordinator } = await stack(mode);
      // A run already running when its version is paused finishes.
      const slow = await client.start(chain, { steps: 4, stepMs: 150 });
      await eventually('the slow run to run', async () => (await client.get(slow.id)).status === 'running');
      await client.pauseWorkflow(chain);
      const view = await client.pauseWorkflow(echo);
      expect(view).toMatchObject({ name: 'echo', version: '1', paused: true, pausedShards: [] });
      const paused = await client.startMany(Array.from({ length: 5 }, (_, i) => ({ workflow: echo, input: i })));
      expect(paused.every((run) => run.status === 'queued' && run.paused)).toBe(true);
      expect(await client.waitForResult(slow.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed', paused: false });
      // Another version through the same workers, started after: it completes, so the workers were
      // taking work (and had every chance to take the paused runs).
      for (let i = 0; i < 3; i++) {
        const other = await client.start({ name: 'order-processing', version: '1.0.0' }, { orderId: `o-${i}` });
        expect(await client.waitForResult(other.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
        // The paused queue's wake-ups were dropped, not circled between Redis and the coordinator.
        if (mode !== 'http') await eventually('the paused queue to hold no wake-up', async () => (await wakeupsInFlight(coordinator, 'echo:1')) === 0);
      }
      expect(await countWhere(`workflow = 'echo' AND status = 'queued'`)).toBe(5);
      const listed = await client.list({ workflow: 'echo' });
      expect(listed.runs.map((run) => run.paused)).toEqual([true, true, true, true, true]);
      expect((await client.get(paused[0].id)).paused).toBe(true);
      const versions = await client.listWorkflows();
      expect(versions.filter((version) => version.paused).map((version) => version.name)).toEqual(['chain', 'echo']);

      expect(await client.resumeWorkflow(echo)).toMatchObject({ paused: false, pausedShards: [] });
      const done = await allDone(client, paused);
      expect(done.map((run) => [run.status, run.paused])).toEqual(Array.from({ length: 5 }, () => ['completed', false]));
    }, 60_000);

    it('with a concurrency limit of 2 (1 per key), 4 workers at concurrency 10 never run more at once', async () => {
      const { client } = await stack(mode, { workers: 4, concurrency: 10 });
      await client.setWorkflowLimits(chain, { concurrency: 2, concurrencyPerKey: 1 });
      const runs = await client.startMany(
        Array.from({ length: 16 }, (_, i) => ({ workflow: chain, input: { steps: 2, stepMs: 40 }, concurrencyKey: i % 4 === 0 ? undefined : `k${i % 2}` })),
      );
      let most = 0;
      let mostPerKey = 0;
      const finished = allDone(client, runs);
      let done = false;
      void finished.finally(() => (done = true));
      while (!done) {
        const [sample] = await db.sql<{ total: number; per_key: number | null }>(
          `SELECT (SELECT count(*)::int FROM runs WHERE workflow = 'chain' AND status = 'running') AS total,
                  (SELECT max(n) FROM (SELECT count(*)::int AS n FROM runs WHERE workflow = 'chain' AND status = 'running'
                                         AND concurrency_key IS NOT NULL GROUP BY concurrency_key) k) AS per_key`,
        );
        most = Math.max(most, sample.total);
        mostPerKey = Math.max(mostPerKey, sample.per_key ?? 0);
        expect(sample.total).toBeLessThanOrEqual(2);
        expect(sample.per_key ?? 0).toBeLessThanOrEqual(1);
      }
      expect((await finished).every((run) => run.status === 'completed')).toBe(true);
      // The limit was reached (the sampling could have seen a breach).
      expect(most).toBe(2);
      expect(mostPerKey).toBe(1);
    }, 90_000);

    it("gives a slot freed in one shard to the version's run waiting in another", async () => {
      const { client } = await stack(mode, { shards: 'eu,us' });
      await client.setWorkflowLimits(chain, { concurrency: 1 });
      const slow = await client.start(chain, { steps: 2, stepMs: 200 }, { shard: 'eu' });
      await eventually('the slow run to hold the slot', async () => (await client.get(slow.id)).status === 'running');
      const next = await client.start(chain, { steps: 1 }, { shard: 'us' });
      // Its own wake-up came while the slot was held, and was dropped: the freed slot must bring one.
      expect(await client.waitForResult(next.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
      expect(new Date((await client.get(next.id)).startedAt!).getTime()).toBeGreaterThanOrEqual(new Date((await client.get(slow.id)).finishedAt!).getTime());
    }, 30_000);

    it('delivers about 5 runs a second under a rate limit of 5/s, delaying the others (none fails)', async () => {
      const { client } = await stack(mode, { workers: 2 });
      await client.setWorkflowLimits(echo, { ratePerSecond: 5 });
      const runs = await client.startMany(Array.from({ length: 30 }, (_, i) => ({ workflow: echo, input: i })));
      const done = await allDone(client, runs);
      expect(done.every((run) => run.status === 'completed')).toBe(true);
      const starts = done.map((run) => new Date(run.startedAt!).getTime()).sort((a, b) => a - b);
      // The bucket starts full (5 at once), then a token every 200 ms: 25 more over 5 s.
      const spanMs = starts[starts.length - 1] - starts[0];
      expect(spanMs).toBeGreaterThan(4_400);
      expect(spanMs).toBeLessThan(6_500);
      // Per whole second after the first: 5, give or take what a late wake-up on a loaded machine moves
      // across a window's edge (the bucket then catches up, never beyond one second's worth).
      for (let window = 1; window < 5; window++) {
        const from = starts[0] + window * 1_000;
        const inWindow = starts.filter((at) => at >= from && at < from + 1_000).length;
        expect(inWindow).toBeGreaterThanOrEqual(3);
        expect(inWindow).toBeLessThanOrEqual(7);
      }
    }, 60_000);
  });

  describe.each(['redis-zset', 'redis-streams'] as const)('%s, a late wake-up', (mode) => {
    it("goes on under a rate limit when the next token's wake-up is taken late, by a worker that was busy (whole tokens left, one wake-up)", async () => {
      const { client } = await stack(mode, { concurrency: 2 });
      await client.setWorkflowLimits(echo, { ratePerSecond: 2 });
      const runs = await client.startMany(Array.from({ length: 6 }, (_, i) => ({ workflow: echo, input: i })));
      // The bucket's two tokens go at once; the wake-up for the next one is due in 500 ms. The worker is busy
      // with two slow runs past it, so it takes that wake-up late, when the bucket is full again: its take
      // brings one run and leaves a whole token, which nothing else would come for (republish is off).
      await eventually('the first two runs to end', async () => (await countWhere(`workflow = 'echo' AND status = 'completed'`)) === 2);
      const slow = await client.startMany([0, 1].map(() => ({ workflow: chain, input: { steps: 1, stepMs: 1_500 } })));
      const done = await allDone(client, [...runs, ...slow]);
      expect(done.map((run) => run.status)).toEqual(Array.from({ length: 8 }, () => 'completed'));
    }, 60_000);
  });

  describe.each(MODES)('%s, rate per key', (mode) => {
    it('delivers about 3 runs a second of each key under a per-key rate of 3/s (6/s for two keys); runs without a key are not limited by it', async () => {
      const { client } = await stack(mode, { workers: 2 });
      await client.setWorkflowLimits(echo, { ratePerKeyPerSecond: 3 });
      const keyOf = (i: number) => [undefined, 'a', 'b'][i % 3];
      const runs = await client.startMany(Array.from({ length: 45 }, (_, i) => ({ workflow: echo, input: i, concurrencyKey: keyOf(i) })));
      const done = await allDone(client, runs);
      expect(done.every((run) => run.status === 'completed')).toBe(true);
      const startsOf = (key: string | undefined) =>
        done
          .filter((_, i) => keyOf(i) === key)
          .map((run) => new Date(run.startedAt!).getTime())
          .sort((a, b) => a - b);
      const [a, b, unkeyed] = [startsOf('a'), startsOf('b'), startsOf(undefined)];
      const first = Math.min(a[0], b[0], unkeyed[0]);
      // 15 runs without a key start at once: the per-key rate does not hold them back.
      expect(unkeyed[unkeyed.length - 1] - first).toBeLessThan(1_500);
      // 15 runs per key: a full bucket (3 at once), then a token every 333 ms: 12 more over 4 s.
      for (const starts of [a, b]) {
        const spanMs = starts[starts.length - 1] - starts[0];
        expect(spanMs).toBeGreaterThan(3_400);
        expect(spanMs).toBeLessThan(5_500);
      }
      // Per whole second after the first: 3 of each key and 6 in all, give or take a wake-up moved
      // across a window's edge (the bucket then catches up, never beyond one second's worth).
      for (let window = 1; window < 4; window++) {
        const from = first + window * 1_000;
        const inWindow = (starts: number[]) => starts.filter((at) => at >= from && at < from + 1_000).length;
        for (const starts of [a, b]) {
          expect(inWindow(starts)).toBeGreaterThanOrEqual(1);
          expect(inWindow(starts)).toBeLessThanOrEqual(5);
        }
        expect(inWindow(a) + inWindow(b)).toBeGreaterThanOrEqual(3);
        expect(inWindow(a) + inWindow(b)).toBeLessThanOrEqual(9);
      }
    }, 60_000);

    it('starts the runs of a key in order, a run started while others of its key are delayed after them', async () => {
      const { client } = await stack(mode);
      await client.setWorkflowLimits(echo, { ratePerKeyPerSecond: 3 });
      const runs: RunView[] = [];
      for (let i = 0; i < 6; i++) runs.push(await client.start(echo, i, { concurrencyKey: 'k' }));
      // The bucket held 3: the others wait for their tokens (due then), and so do runs started now. (Every queued run
      // delayed, and one still waiting for its token: on a loaded machine the six starts can take longer than the
      // first delayed run waits, so "three delayed" may never be seen at once.)
      await eventually(
        'the runs over the rate to be delayed',
        async () => (await countWhere(`status = 'queued' AND NOT rate_delayed`)) === 0 && (await countWhere(`status = 'queued' AND rate_delayed`)) >= 1,
      );
      for (let i = 6; i < 9; i++) runs.push(await client.start(echo, i, { concurrencyKey: 'k' }));
      const done = await allDone(client, runs);
      expect(done.every((run) => run.status === 'completed')).toBe(true);
      const starts = done.map((run) => new Date(run.startedAt!).getTime());
      expect([...starts].sort((x, y) => x - y)).toEqual(starts);
      // Each delayed run was given a token of its own, the later ones behind those already delayed.
      const dueTimes = done.map((run) => new Date(run.runAt!).getTime());
      expect(dueTimes.slice(1).every((at, i) => at > dueTimes[i])).toBe(true);
      // Tokens at 0 (three), then one every 333 ms: the last at 2 s.
      expect(starts[8] - starts[0]).toBeGreaterThan(1_700);
    }, 30_000);
  });

  it("gives a key's tokens to its runs next in line when a claim takes fewer, delaying only those beyond", async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    await client.setWorkflowLimits(echo, { ratePerKeyPerSecond: 3 });
    const runs: RunView[] = [];
    for (let i = 0; i < 6; i++) runs.push(await client.start(echo, i, { concurrencyKey: 'k' }));
    const claim = async (limit: number) =>
      (
        (
          await request(coordinator.url)
            .post('/v1/worker/claims')
            .send({ workerId: 'claimer', workflows: [echo], limit, waitMs: 0 })
            .expect(200)
        ).body.runs as { id: string }[]
      ).map((run) => run.id);
    // The bucket holds 3: a claim of 2 leaves the third token to the third run, and delays the others.
    expect(await claim(2)).toEqual([runs[0].id, runs[1].id]);
    expect(await claim(5)).toEqual([runs[2].id]);
    const delayed = await db.sql<{ id: string; late: boolean }>(`SELECT id, due_at > now() AS late FROM runs WHERE status = 'queued' ORDER BY due_at`);
    expect(delayed).toEqual(runs.slice(3).map((run) => ({ id: run.id, late: true })));
  });

  it("keeps a delayed run's place when its token comes a little after its time (a rate of 1/s or less), and no run started meanwhile takes it", async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    await client.setWorkflowLimits(echo, { ratePerKeyPerSecond: 1 });
    const runs: RunView[] = [];
    for (let i = 0; i < 4; i++) runs.push(await client.start(echo, i, { concurrencyKey: 'k' }));
    const claim = async () =>
      (
        (
          await request(coordinator.url)
            .post('/v1/worker/claims')
            .send({ workerId: 'claimer', workflows: [echo], limit: 10, waitMs: 0 })
            .expect(200)
        ).body.runs as { id: string }[]
      ).map((run) => run.id);
    const dueOf = async (run: RunView) => (await db.sql<{ due_at: Date }>('SELECT due_at FROM runs WHERE id = $1', [run.id]))[0].due_at.getTime();
    /** Until the database's clock is `ms` past the run's due time. */
    const past = (run: RunView, ms: number) =>
      eventually(`${ms} ms past run ${runs.indexOf(run)}'s due time`, async () => {
        const [{ past }] = await db.sql<{ past: boolean }>(`SELECT now() >= due_at + $2 * interval '1 millisecond' AS past FROM runs WHERE id = $1`, [
          run.id,
          ms,
        ]);
        return past;
      });
    // The bucket holds one token: run 0 now, and runs 1-3 each given a token of its own, a second apart.
    expect(await claim()).toEqual([runs[0].id]);
    // Run 1 is taken 300 ms after its time: its bucket sat full meanwhile (a bucket holds one token at this
    // rate), so the next token comes 300 ms after run 2's time.
    await past(runs[1], 300);
    expect(await claim()).toEqual([runs[1].id]);
    // A run of the key started now (not yet delayed) waits behind the delayed ones, even when its claim comes
    // with theirs and it is due before them.
    const late = await client.start(echo, 4, { concurrencyKey: 'k' });
    await past(runs[2], 50);
    expect(await claim()).toEqual([]);
    // Run 2 waits for its token, still ahead of run 3; the new run goes behind run 3.
    const [due2, due3, dueLate] = [await dueOf(runs[2]), await dueOf(runs[3]), await dueOf(late)];
    expect(due2).toBeLessThan(due3);
    expect(dueLate).toBeGreaterThan(due3);
    const order: string[] = [];
    await eventually(
      'runs 2, 3 and the new one to be taken',
      async () => {
        order.push(...(await claim()));
        return order.length === 3;
      },
      10_000,
    );
    expect(order).toEqual([runs[2].id, runs[3].id, late.id]);
  }, 30_000);

  it('forgets the buckets of idle keys: a claim deletes those full again, keeps the ones it charged', async () => {
    const { client } = await stack('http');
    await client.setWorkflowLimits(echo, { ratePerKeyPerSecond: 5 });
    const keys = (await allDone(client, await client.startMany(['a', 'b', 'c'].map((key) => ({ workflow: echo, concurrencyKey: key }))))).map(
      (run) => run.concurrencyKey,
    );
    expect(keys).toEqual(['a', 'b', 'c']);
    const buckets = async () => (await db.sql<{ key: string }>('SELECT key FROM workflow_key_buckets ORDER BY key')).map((row) => row.key);
    expect(await buckets()).toEqual(['a', 'b', 'c']);
    // A bucket of 5/s is full again one second after its last charge.
    await eventually(
      'the buckets to be full again',
      async () => (await db.sql<{ full: boolean }>(`SELECT bool_and(refilled_at < now() - interval '1.1 seconds') AS full FROM workflow_key_buckets`))[0].full,
    );
    await client.waitForResult((await client.start(echo, null, { concurrencyKey: 'd' })).id, { timeoutMs: 20_000 });
    expect(await buckets()).toEqual(['d']);
  }, 30_000);

  it('holds a concurrency limit across two coordinators and four workers following both (Redis Streams)', async () => {
    const prefix = testPrefix('flow-two');
    const coordinators: RunningCoordinator[] = [];
    for (let i = 0; i < 2; i++) {
      const coordinator = await startCoordinator(db.url, {
        dispatch: 'redis-streams',
        redisPrefix: prefix,
        streamPartitions: 2,
        republishIntervalMs: 3_600_000,
      });
      running.push(coordinator);
      coordinators.push(coordinator);
    }
    const urls = coordinators.map((coordinator) => coordinator.url).join(',');
    for (let i = 0; i < 4; i++) {
      const config = loadWorkerConfig({
        COORDINATOR_URL: urls,
        SUBSCRIBER: 'redis-streams',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '500',
        WORKER_CONCURRENCY: '10',
        WORKER_ID: `two-${i}`,
      });
      running.push(await startCustomWorker(coordinators[0].url, workerModuleOptions(config, EXAMPLE_WORKFLOWS)));
    }
    const [a, b] = coordinators.map((coordinator) => new WorkflowClient({ url: coordinator.url }));
    await a.setWorkflowLimits(chain, { concurrency: 2 });
    const runs = [
      ...(await a.startMany(Array.from({ length: 10 }, () => ({ workflow: chain, input: { steps: 2, stepMs: 30 } })))),
      ...(await b.startMany(Array.from({ length: 10 }, () => ({ workflow: chain, input: { steps: 2, stepMs: 30 } })))),
    ];
    let most = 0;
    let done = false;
    const finished = allDone(b, runs).finally(() => (done = true));
    while (!done) {
      const now = await countWhere(`workflow = 'chain' AND status = 'running'`);
      expect(now).toBeLessThanOrEqual(2);
      most = Math.max(most, now);
    }
    expect((await finished).every((run) => run.status === 'completed')).toBe(true);
    expect(most).toBe(2);
  }, 60_000);

  it('pauses one shard: its runs wait, the version runs in its other shards; resuming the shard lets them run', async () => {
    const { client } = await stack('http', { shards: 'eu,us' });
    await client.pauseWorkflow(echo, { shard: 'eu' });
    const [eu, us] = await client.startMany([
      { workflow: echo, input: 'eu', shard: 'eu' },
      { workflow: echo, input: 'us', shard: 'us' },
    ]);
    expect(eu.paused).toBe(true);
    expect(us.paused).toBe(false);
    expect(await client.waitForResult(us.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
    expect((await client.get(eu.id)).status).toBe('queued');
    expect(await client.resumeWorkflow(echo, { shard: 'eu' })).toMatchObject({ paused: false, pausedShards: [] });
    expect(await client.waitForResult(eu.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
  }, 30_000);

  it('a sleeping run holds no slot: with concurrency 1 another run of the version completes while it sleeps', async () => {
    const { client } = await stack('http');
    await client.setWorkflowLimits(sleepy, { concurrency: 1 });
    const sleeper = await client.start(sleepy, { ms: 60_000 });
    await eventually('the run to sleep', async () => (await client.get(sleeper.id)).status === 'waiting');
    const quick = await client.start(sleepy, { ms: 0 });
    expect(await client.waitForResult(quick.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
  }, 30_000);

  it('gives the last slot to one claimer only, however many claim at once', async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    await client.setWorkflowLimits(echo, { concurrency: 3 });
    await client.startMany(Array.from({ length: 40 }, (_, i) => ({ workflow: echo, input: i })));
    const claims = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        request(coordinator.url)
          .post('/v1/worker/claims')
          .send({ workerId: `claimer-${i}`, workflows: [echo], limit: 2, waitMs: 0 })
          .expect(200),
      ),
    );
    expect(claims.reduce((sum, claim) => sum + claim.body.runs.length, 0)).toBe(3);
    expect(await countWhere(`status = 'running'`)).toBe(3);
    // Raising the limit admits more at once.
    await client.setWorkflowLimits(echo, { concurrency: 5 });
    const more = await request(coordinator.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'late', workflows: [echo], limit: 10, waitMs: 0 })
      .expect(200);
    expect(more.body.runs).toHaveLength(2);
  });

  it('drops the wake-ups of a paused or full queue instead of handing them back to circle through Redis', async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    await client.startMany(Array.from({ length: 5 }, (_, i) => ({ workflow: echo, input: i })));
    const take = async (wakeups: string[]) =>
      (
        await request(coordinator.url)
          .post('/v1/worker/takes')
          .send({ workerId: 'taker', workflows: [{ ...echo, wakeups }] })
          .expect(200)
      ).body as {
        runs: unknown[];
        requeue: unknown[];
      };
    await client.pauseWorkflow(echo);
    expect(await take(['a', 'b', 'c'])).toEqual({ runs: [], requeue: [] });
    await client.resumeWorkflow(echo);
    await client.setWorkflowLimits(echo, { concurrency: 2 });
    const full = await take(['d', 'e', 'f']);
    expect([full.runs.length, full.requeue]).toEqual([2, []]);
    expect(await take(['g'])).toEqual({ runs: [], requeue: [] });

    // Per key: runs of a key whose slots are full are not work for a wake-up either.
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox CASCADE`);
    await client.setWorkflowLimits(echo, { concurrencyPerKey: 1 });
    await client.startMany(Array.from({ length: 3 }, (_, i) => ({ workflow: echo, input: i, concurrencyKey: 'm-1' })));
    expect((await take(['h'])).runs).toHaveLength(1);
    expect(await take(['i', 'j'])).toEqual({ runs: [], requeue: [] });
  });

  it('counts runs a claim took while a concurrency limit was being set against that limit', async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    await client.startMany(Array.from({ length: 10 }, (_, i) => ({ workflow: echo, input: i })));
    // A claim that takes 5 runs of the still unlimited version and has not committed yet: the same
    // statement the claim API runs, inside a transaction held open on a connection of the test's own.
    const claimer = new Client({ connectionString: db.url });
    await claimer.connect();
    try {
      await claimer.query('BEGIN');
      await claimer.query(
        `UPDATE runs SET status = 'running', revision = revision + 1, claimed_by = 'slow', heartbeat_at = now(), started_at = now()
          WHERE id IN (SELECT id FROM runs WHERE status = 'queued' ORDER BY id LIMIT 5)`,
      );
      await claimer.query(`SELECT * FROM flow_admit(ARRAY['echo:1'], ARRAY[5])`);
      // The limit is set meanwhile: it must wait for that claim to commit and then count its runs.
      const setting = client.setWorkflowLimits(echo, { concurrency: 2 });
      await eventually('the limit to wait for the claim', async () => {
        const [{ n }] = await db.sql<{ n: string }>(`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
        return Number(n) > 0;
      });
      await claimer.query('COMMIT');
      expect((await setting).running).toBe(5);
    } finally {
      await claimer.end();
    }
    const claimed = await request(coordinator.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'late', workflows: [echo], limit: 10, waitMs: 0 })
      .expect(200);
    expect(claimed.body.runs).toHaveLength(0);
    expect(await countWhere(`status = 'running'`)).toBe(5);
  });

  it("keeps a dead worker's slot until its claim is taken over, and the takeover reuses it", async () => {
    const coordinator = await startCoordinator(db.url, { claimMinIdleTimeMs: 400, heartbeatIntervalMs: 100 });
    running.push(coordinator);
    const client = new WorkflowClient({ url: coordinator.url });
    await client.setWorkflowLimits(echo, { concurrency: 1 });
    const [first] = await client.startMany([
      { workflow: echo, input: 1 },
      { workflow: echo, input: 2 },
    ]);
    const claim = async (workerId: string) =>
      (
        await request(coordinator.url)
          .post('/v1/worker/claims')
          .send({ workerId, workflows: [echo], limit: 5, waitMs: 0 })
          .expect(200)
      ).body.runs as { id: string }[];
    // A worker takes the one slot and dies (never heartbeats); while its claim is fresh, nobody gets a run.
    expect((await claim('dies')).map((run) => run.id)).toEqual([first.id]);
    expect(await claim('alive')).toEqual([]);
    // Once the claim went idle, the next claimer takes that run over in the same slot, and no second run.
    const taken = await eventually('the takeover', async () => {
      const runs = await claim('alive');
      return runs.length > 0 && runs;
    });
    expect(taken.map((run) => run.id)).toEqual([first.id]);
    expect(await countWhere(`status = 'running'`)).toBe(1);
    expect(await countWhere(`status = 'queued'`)).toBe(1);
  });

  it('lists limits with their source: an API-set limit wins over none, clearing it lifts it', async () => {
    const { client } = await stack('http', { workers: 0 });
    expect(await client.setWorkflowLimits(chain, { concurrency: 3, ratePerSecond: 2.5, ratePerKeyPerSecond: 0.5 })).toMatchObject({
      limits: { concurrency: 3, concurrencyPerKey: null, ratePerSecond: 2.5, ratePerKeyPerSecond: 0.5 },
      apiLimits: { concurrency: 3, concurrencyPerKey: null, ratePerSecond: 2.5, ratePerKeyPerSecond: 0.5 },
      codeLimits: { concurrency: null, concurrencyPerKey: null, ratePerSecond: null, ratePerKeyPerSecond: null },
      running: 0,
    });
    expect(await client.clearWorkflowLimits(chain)).toMatchObject({
      limits: { concurrency: null, concurrencyPerKey: null, ratePerSecond: null, ratePerKeyPerSecond: null },
    });
  });

  it('applies limits declared in code once a worker registers them; an API-set limit wins until cleared', async () => {
    const { coordinator, client } = await stack('http', { workers: 0 });
    const workers = [0, 1].map((i) => startCustomWorker(coordinator.url, { workflows: [singleFile], concurrency: 5, workerId: `declaring-${i}` }));
    for (const worker of await Promise.all(workers)) running.push(worker);
    const declared = await eventually('the declared limit', async () =>
      (await client.listWorkflows()).find((w) => w.name === 'single-file' && w.limits.concurrency),
    );
    expect(declared).toMatchObject({ codeLimits: { concurrency: 1 }, apiLimits: { concurrency: null }, limits: { concurrency: 1 } });

    const sampleMost = async (runs: RunView[]) => {
      let most = 0;
      let done = false;
      const finished = allDone(client, runs).finally(() => (done = true));
      while (!done) most = Math.max(most, await countWhere(`workflow = 'single-file' AND status = 'running'`));
      expect((await finished).every((run) => run.status === 'completed')).toBe(true);
      return most;
    };
    expect(await sampleMost(await client.startMany(Array.from({ length: 6 }, () => ({ workflow: singleFile, input: { ms: 30 } }))))).toBe(1);

    expect(await client.setWorkflowLimits(singleFile, { concurrency: 3 })).toMatchObject({ limits: { concurrency: 3 }, codeLimits: { concurrency: 1 } });
    expect(await sampleMost(await client.startMany(Array.from({ length: 12 }, () => ({ workflow: singleFile, input: { ms: 100 } }))))).toBe(3);
    expect(await client.clearWorkflowLimits(singleFile)).toMatchObject({ limits: { concurrency: 1 }, apiLimits: { concurrency: null } });
  }, 60_000);
});
