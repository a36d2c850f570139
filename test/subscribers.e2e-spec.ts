import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun, RunView } from '@nest-durable/client';
import { CoordinatorApi, FailoverSubscriber, type NextDelayParams, SUBSCRIBER, type Subscriber, WorkflowRegistry } from '@nest-durable/worker';
import { RedisConnection, type TransportSubscriber } from '@nest-durable/worker/redis';
import { WorkflowClient } from '@nest-durable/client';
import { streamKey, MAX_GIVE_BACKS, StreamEntries } from '@app/streams';
import { Injectable } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS, ExampleWorkflowsModule } from '../apps/worker/src/workflows';
import { WaitingClaims } from '../apps/coordinator/src/hand-off/waiting-claims.service';
import { startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { RedisServer, TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

/** Worker subscribers against real Redis and PostgreSQL, apps in this process. */
describe('subscribers', () => {
  let db: TestDatabase;
  let redis: Redis;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('subscribers');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  async function stack(mode: 'redis-zset' | 'redis-streams', overrides: { redisUrl?: string; worker?: Record<string, string> } = {}) {
    const prefix = testPrefix(mode);
    const redisUrl = overrides.redisUrl ?? TEST_REDIS_URL;
    const coordinator = await startCoordinator(db.url, {
      dispatch: mode,
      redisUrl,
      redisPrefix: prefix,
      streamPartitions: 2,
      outboxRetryBaseMs: 50,
      outboxRetryMaxMs: 200,
      republishIntervalMs: 3_600_000,
    });
    running.push(coordinator);
    const config = loadWorkerConfig({
      COORDINATOR_URL: coordinator.url,
      SUBSCRIBER: mode,
      REDIS_URL: redisUrl,
      REDIS_PREFIX: prefix,
      REDIS_BLOCK_MS: '500',
      CLAIM_WAIT_MS: '1000',
      ...overrides.worker,
    });
    const worker = await startCustomWorker(coordinator.url, workerModuleOptions(config, EXAMPLE_WORKFLOWS), [ExampleWorkflowsModule]);
    running.push(worker);
    const subscriber = worker.app.get<FailoverSubscriber>(SUBSCRIBER);
    return { coordinator, worker, subscriber, prefix, client: new WorkflowClient({ url: coordinator.url }) };
  }

  const finish = (client: WorkflowClient, run: RunView) => client.waitForResult(run.id, { timeoutMs: 20_000 });

  describe.each(['redis-zset', 'redis-streams'] as const)('%s', (mode) => {
    it('runs the example workflows end to end through Redis', async () => {
      const { client, subscriber, coordinator } = await stack(mode);
      expect(subscriber).toBeInstanceOf(FailoverSubscriber);
      expect(subscriber.primary.name).toBe(mode);

      const order = await client.start({ name: 'order-processing', version: '1.0.0' }, { orderId: 'o-1' });
      const chain = await client.start({ name: 'chain', version: '1' }, { steps: 5 });
      const sleepy = await client.start({ name: 'sleepy', version: '1' }, { ms: 200 });
      const parent = await client.start({ name: 'parent', version: '1' }, { steps: 2 });
      const flaky = await client.start({ name: 'flaky', version: '1' }, { failTimes: 1 });
      const approval = await client.start({ name: 'approval', version: '1' }, { timeoutMs: 60_000 });
      await eventually('the approval run to wait', async () => (await client.get(approval.id)).status === 'waiting');
      await request(coordinator.url)
        .post(`/v1/runs/${approval.id}/events/approved`)
        .send({ data: { ok: true } })
        .expect(202);

      expect(await finish(client, order)).toMatchObject({ status: 'completed', output: { status: 'shipped' } });
      expect(await finish(client, chain)).toMatchObject({ status: 'completed', output: { steps: 5 } });
      expect(await finish(client, sleepy)).toMatchObject({ status: 'completed', output: { sleptMs: 200 } });
      expect(await finish(client, parent)).toMatchObject({ status: 'completed', output: { steps: 2 } });
      expect(await finish(client, flaky)).toMatchObject({ status: 'completed', output: { attempts: 2 } });
      expect(await finish(client, approval)).toMatchObject({ status: 'completed', output: { ok: true } });
      // All of it came through Redis: the HTTP backup was never needed.
      expect(subscriber.failovers).toBe(0);
    });

    it('is handed the runs started on its coordinator while it has slots free, and strands none when starts crowd in', async () => {
      const { client, coordinator } = await stack(mode, { worker: { WORKER_CONCURRENCY: '2' } });
      const start = () => request(coordinator.url).post('/v1/runs').send({ workflow: 'echo', version: '1', input: 1 }).expect(201);
      // Once the worker's offer waits, a start hands its run over in its own commit: running at its 201. (Starts
      // made before it would come through Redis, and keep a worker of two slots reading with one: no offer.)
      const waiting = coordinator.app.get(WaitingClaims);
      await eventually('the worker to offer itself', async () => waiting.waiting('echo:1') > 0);
      const handed = await start();
      expect(handed.body.status).toBe('running');
      const first: string[] = [handed.body.id];
      // Starts one at a time beside batches (which go through Redis): offers are handed runs, withdrawn and
      // made again while reads bring runs, whichever comes first.
      const crowd = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const [single, batch] = await Promise.all([
            start(),
            request(coordinator.url)
              .post('/v1/runs/batch')
              .send({ runs: Array.from({ length: 1 + (i % 3) }, () => ({ workflow: 'echo', version: '1', input: 2 })) })
              .expect(201),
          ]);
          return [single.body.id, ...batch.body.runs.map((run: RunView) => run.id)] as string[];
        }),
      );
      const ids = [...first, ...crowd.flat()];
      expect((await Promise.all(ids.map((id) => client.waitForResult(id, { timeoutMs: 20_000 })))).map((run) => run.status)).toEqual(
        ids.map(() => 'completed'),
      );
      // Each taken once: a run handed to an offer whose answer was lost would be taken over later, at a higher revision.
      const revisions = await db.sql<{ revision: number }>('SELECT DISTINCT revision FROM runs WHERE id = ANY($1)', [ids]);
      expect(revisions).toEqual([{ revision: 2 }]);
    });

    it('fails over to HTTP when redis-server stops mid-load, and returns when it is back', async () => {
      const server = new RedisServer(await freePort());
      await server.start();
      try {
        const { client, subscriber, coordinator } = await stack(mode, { redisUrl: server.url });
        const first = (
          await request(coordinator.url)
            .post('/v1/runs/batch')
            .send({ runs: Array.from({ length: 100 }, () => ({ workflow: 'chain', version: '1', input: { steps: 2 } })) })
            .expect(201)
        ).body.runs as RunView[];
        await eventually('some runs done', async () => (await client.list({ workflow: 'chain', status: 'completed' })).runs.length >= 10);
        await server.stop();
        const second = (
          await request(coordinator.url)
            .post('/v1/runs/batch')
            .send({ runs: Array.from({ length: 50 }, () => ({ workflow: 'echo', version: '1', input: 1 })) })
            .expect(201)
        ).body.runs as RunView[];
        const done = await Promise.all([...first, ...second].map((run) => finish(client, run)));
        expect(done.every((run) => run.status === 'completed')).toBe(true);
        expect(subscriber.failovers).toBeGreaterThanOrEqual(1);
        expect(subscriber.usingBackup).toBe(true);

        await server.start();
        await eventually('the worker to return to Redis', async () => !subscriber.usingBackup, 20_000);
        const after = await client.start({ name: 'echo', version: '1' }, 'after');
        expect(await finish(client, after)).toMatchObject({ status: 'completed' });
      } finally {
        await server.stop();
      }
    }, 60_000);
  });

  it('hands a wake-up delivered more than MAX_DELIVERIES times to the coordinator as a dead letter, while other runs keep flowing', async () => {
    const { client, subscriber, prefix } = await stack('redis-streams', {
      worker: { STREAM_RECLAIM_IDLE_MS: '300', MAX_DELIVERIES: '2', HEARTBEAT_INTERVAL_MS: '100' },
    });
    const later = await client.start({ name: 'echo', version: '1' }, 'later', { runAt: new Date(Date.now() + 3_600_000) });
    // A consumer that took a wake-up and died, after earlier deliveries died too: added and read in one
    // transaction, so the live worker cannot read it first.
    const stream = streamKey(prefix, 'echo:1', 0, 2);
    const [[, entryId]] = (await redis
      .multi()
      .xadd(stream, '*', 'run', later.id)
      .xreadgroup('GROUP', 'workers', 'ghost', 'COUNT', 1, 'STREAMS', stream, '>')
      .exec()) as [unknown, string][];
    await redis.xclaim(stream, 'workers', 'ghost', 0, entryId, 'RETRYCOUNT', 2);

    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => client.start({ name: 'echo', version: '1' }, i)));
    const done = await Promise.all(runs.map((run) => finish(client, run)));
    expect(done.every((run) => run.status === 'completed')).toBe(true);

    const [dead] = await eventually(
      'the wake-up dead-lettered',
      async () => {
        const rows = await db.sql<{ origin: string; run_id: string; queue: string; reason: string; detail: Record<string, unknown> }>(
          // Only Streams' own: a slow machine can leave the Redis outage of an earlier test long enough for
          // its outbox rows to run out of publish attempts.
          `SELECT origin, run_id, queue, reason, detail FROM dead_letters WHERE origin = 'stream'`,
        );
        return rows.length > 0 ? rows : undefined;
      },
      20_000,
    );
    expect(dead).toEqual({
      origin: 'stream',
      run_id: later.id,
      queue: 'echo:1',
      reason: 'delivered_too_often',
      detail: { wakeup: `0/${entryId}`, deliveries: 3 },
    });
    // The worker acknowledges it once the coordinator has recorded it.
    await eventually('the entry acknowledged', async () => ((await redis.xpending(stream, 'workers')) as [number])[0] === 0);
    expect((subscriber.primary as TransportSubscriber).deadLettered).toBe(1);
    // Its run was waiting for its time, not held by a dead worker: left as it was.
    expect((await client.get(later.id)).status).toBe('queued');
  }, 60_000);

  it('takes back entries Redis delivered to this worker by a read it never saw the answer to', async () => {
    const { client, prefix } = await stack('redis-streams', { worker: { WORKER_ID: 'forgetful', STREAM_RECLAIM_IDLE_MS: '60000' } });
    const run = await client.start({ name: 'echo', version: '1' }, 'adopted', { runAt: new Date(Date.now() + 3_600_000) });
    await db.sql(`UPDATE runs SET due_at = now() WHERE id = $1`, [run.id]); // due, but no wake-up sent for it
    // What a blocking read given up by the client leaves behind: an entry delivered to this very consumer.
    const stream = streamKey(prefix, 'echo:1', 0, 2);
    await redis.multi().xadd(stream, '*', 'run', run.id).xreadgroup('GROUP', 'workers', 'forgetful', 'COUNT', 1, 'STREAMS', stream, '>').exec();
    // Long before another worker could claim it (60 s idle), this one takes it back and runs it.
    expect(await client.waitForResult(run.id, { timeoutMs: 15_000 })).toMatchObject({ status: 'completed', output: 'adopted' });
    // The worker acknowledges the entry after its own report of the end has been answered, which can be
    // after the result reaches this client (the coordinator hands the ended run to result waits first).
    await eventually('the entry acknowledged', async () => ((await redis.xpending(stream, 'workers')) as [number])[0] === 0);
  }, 30_000);

  it("reclaims a dead consumer's entry behind many live ones, resuming its scan where it stopped", async () => {
    const prefix = testPrefix('cursor');
    const connection = new RedisConnection({ url: TEST_REDIS_URL, prefix });
    try {
      const entries = new StreamEntries(connection, 'rescuer');
      await entries.whenReady();
      const stream = `${prefix}cursor`;
      await redis.xgroup('CREATE', stream, 'workers', '0', 'MKSTREAM');
      for (let i = 0; i < 25; i++) await redis.xadd(stream, '*', 'run', `live-${i}`);
      const deadId = (await redis.xadd(stream, '*', 'run', 'dead'))!;
      await redis.xreadgroup('GROUP', 'workers', 'dead', 'COUNT', 26, 'STREAMS', stream, '>');
      const live = ((await redis.xrange(stream, '-', '+')) as [string, string[]][]).slice(0, 25).map(([id]) => id);
      await eventually('the dead one idle for a second', async () => {
        const [[, , idle]] = (await redis.xpending(stream, 'workers', deadId, deadId, 1)) as [string, string, number][];
        return idle >= 1_000;
      });
      // One free slot: XAUTOCLAIM looks at 10 entries a call, so only resuming reaches the dead one behind
      // the 25 live ones (touched by their consumer before every call, so they are never idle that long).
      const found: string[] = [];
      for (let call = 0; call < 5 && found.length === 0; call++) {
        await redis.xclaim(stream, 'workers', 'live', 0, ...live, 'JUSTID');
        found.push(...(await entries.reclaim([stream], 1_000, 1)).entries.map((entry) => entry.id));
      }
      expect(found).toEqual([deadId]);
    } finally {
      await connection.onApplicationShutdown();
    }
  });

  it('gives back an entry it took back without its fields, counting the hops, and drops it past the limit', async () => {
    const prefix = testPrefix('give-back');
    const connection = new RedisConnection({ url: TEST_REDIS_URL, prefix });
    try {
      const entries = new StreamEntries(connection, 'me');
      await entries.whenReady();
      const stream = `${prefix}give-back`;
      await redis.xgroup('CREATE', stream, 'workers', '0', 'MKSTREAM');
      const original = await redis.xadd(stream, '*', 'run', 'r-1');
      await redis.xreadgroup('GROUP', 'workers', 'me', 'COUNT', 1, 'STREAMS', stream, '>');
      // What adoption hands over: the id alone (XCLAIM JUSTID).
      const [adopted] = await entries.adopt([stream], new Set(), 1, 0);
      expect(adopted).toEqual({ stream, id: original, fields: [] });
      await entries.giveBack([adopted]);
      let [[copy, fields]] = (await redis.xrange(stream, '-', '+')) as [string, string[]][];
      expect(fields).toEqual(['run', 'r-1', 'hops', '1']);
      expect(((await redis.xpending(stream, 'workers')) as [number])[0]).toBe(0);
      for (let hop = 2; hop <= MAX_GIVE_BACKS; hop++) {
        await redis.xreadgroup('GROUP', 'workers', 'me', 'COUNT', 1, 'STREAMS', stream, '>');
        await entries.giveBack([{ stream, id: copy, fields }]);
        [[copy, fields]] = (await redis.xrange(stream, '-', '+')) as [string, string[]][];
        expect(fields).toEqual(['run', 'r-1', 'hops', String(hop)]);
      }
      await redis.xreadgroup('GROUP', 'workers', 'me', 'COUNT', 1, 'STREAMS', stream, '>');
      await entries.giveBack([{ stream, id: copy, fields }]);
      expect(await redis.xlen(stream)).toBe(0);
      expect(((await redis.xpending(stream, 'workers')) as [number])[0]).toBe(0);
    } finally {
      await connection.onApplicationShutdown();
    }
  });

  it('uses a custom subscriber registered by a module, with the HTTP subscriber as its backup', async () => {
    @Injectable()
    class RecordingSubscriber implements Subscriber {
      readonly name = 'recording';
      calls = 0;
      acknowledged: string[] = [];

      constructor(
        private readonly api: CoordinatorApi,
        private readonly registry: WorkflowRegistry,
      ) {}

      async getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
        this.calls++;
        return this.api.claim(this.registry.refs(), limit, 500, signal);
      }

      getNextDelay(params: NextDelayParams): number {
        return params.type === 'no_work' ? 0 : 100;
      }

      async acknowledge(runId: string): Promise<void> {
        this.acknowledged.push(runId);
      }
    }

    const coordinator = await startCoordinator(db.url);
    running.push(coordinator);
    const worker = await startCustomWorker(coordinator.url, { workflows: EXAMPLE_WORKFLOWS, subscriber: { useClass: RecordingSubscriber } });
    running.push(worker);
    const client = new WorkflowClient({ url: coordinator.url });
    const run = await client.start({ name: 'echo', version: '1' }, 'custom');
    expect(await finish(client, run)).toMatchObject({ status: 'completed', output: 'custom' });

    const subscriber = worker.app.get<FailoverSubscriber>(SUBSCRIBER);
    expect(subscriber.primary).toBeInstanceOf(RecordingSubscriber);
    const custom = subscriber.primary as RecordingSubscriber;
    expect(custom.calls).toBeGreaterThan(0);
    await eventually('the run acknowledged', async () => custom.acknowledged.includes(run.id));
  });
});
