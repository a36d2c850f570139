import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { type FailoverSubscriber, SUBSCRIBER, WorkerRuntime } from '@nest-durable/worker';
import type { StreamsConsumer, StreamWakeup, TransportSubscriber } from '@nest-durable/worker/redis';
import { WorkflowClient } from '@nest-durable/client';
import { partitionCountKey, queueStreams, sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import request from 'supertest';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

const MODES = ['http', 'redis-zset', 'redis-streams'] as const;
type Mode = (typeof MODES)[number];

/** What the dispatch promises to users, in every mode, against real PostgreSQL and Redis. */
describe('dispatch promises', () => {
  let db: TestDatabase;
  let redis: Redis;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('dispatch_promises');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters, engine_settings CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  async function coordinatorFor(mode: Mode, prefix: string, overrides: Parameters<typeof startCoordinator>[1] = {}) {
    const coordinator = await startCoordinator(db.url, {
      dispatch: mode === 'http' ? 'none' : mode,
      redisPrefix: prefix,
      streamPartitions: 4,
      republishIntervalMs: 3_600_000,
      ...overrides,
    });
    running.push(coordinator);
    return coordinator;
  }

  async function workerFor(mode: Mode, coordinatorUrl: string, prefix: string, env: Record<string, string> = {}): Promise<RunningWorker> {
    const config = loadWorkerConfig({
      COORDINATOR_URL: coordinatorUrl,
      SUBSCRIBER: mode,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      REDIS_BLOCK_MS: '500',
      CLAIM_WAIT_MS: '1000',
      ...env,
    });
    const worker = await startCustomWorker(coordinatorUrl, workerModuleOptions(config, EXAMPLE_WORKFLOWS));
    running.push(worker);
    return worker;
  }

  const startBatch = async (url: string, runs: object[]) => (await request(url).post('/v1/runs/batch').send({ runs }).expect(201)).body.runs as RunView[];
  const countWhere = async (where: string, values: unknown[] = []) =>
    Number((await db.sql<{ n: string }>(`SELECT count(*) AS n FROM runs WHERE ${where}`, values))[0].n);

  describe.each(MODES)('%s', (mode) => {
    it('a worker never executes more runs than its free slots (nor holds more than twice as many, the rest reporting their outcome), over 2 queues x 4 partitions with a backlog of hundreds', async () => {
      const prefix = testPrefix(`capacity-${mode}`);
      const coordinator = await coordinatorFor(mode, prefix);
      const worker = await workerFor(mode, coordinator.url, prefix, { WORKER_CONCURRENCY: '3', WORKER_ID: `capped-${mode}` });
      await startBatch(coordinator.url, [
        ...Array.from({ length: 150 }, () => ({ workflow: 'chain', version: '1', input: { steps: 1, stepMs: 20 } })),
        ...Array.from({ length: 150 }, () => ({ workflow: 'echo', version: '1', input: 'x' })),
      ]);
      const runtime = worker.app.get(WorkerRuntime);
      // Read every millisecond: a run executes for about 20 ms, and the slower machines' claims take a few ms
      // to refill a slot, so the moments the worker executes three runs at once can be shorter than a poll.
      let most = 0;
      const sampler = setInterval(() => (most = Math.max(most, runtime.executingRuns)), 1);
      let mostHeld = 0;
      await eventually(
        'every run completed',
        async () => {
          mostHeld = Math.max(mostHeld, await countWhere(`status = 'running' AND claimed_by = $1`, [`capped-${mode}`]));
          return (await countWhere(`status = 'completed'`)) === 300;
        },
        60_000,
      )
        .catch(async (error: Error) => {
          const statuses = await db.sql(`SELECT status, count(*) FROM runs GROUP BY status`);
          const outbox = await db.sql(`SELECT status, count(*) FROM outbox GROUP BY status`);
          const subscriber = worker.app.get<FailoverSubscriber>(SUBSCRIBER);
          const streams = await Promise.all(
            queueStreams(prefix, ['chain:1', 'echo:1'], 4).map(async (stream) => [
              stream,
              await redis.xlen(stream),
              await redis.xpending(stream, 'workers').catch(() => null),
            ]),
          );
          throw new Error(`${error.message}\n${JSON.stringify({ statuses, outbox, streams, subscriber: subscriber.name, failovers: subscriber.failovers })}`);
        })
        .finally(() => clearInterval(sampler));
      expect(most).toBe(3);
      expect(mostHeld).toBeLessThanOrEqual(6);
      const subscriber = worker.app.get<FailoverSubscriber>(SUBSCRIBER);
      if (mode !== 'http') expect(subscriber.failovers).toBe(0);
    }, 90_000);

    it('among due runs a higher priority starts first: a high-priority run started last starts next', async () => {
      const prefix = testPrefix(`priority-${mode}`);
      const coordinator = await coordinatorFor(mode, prefix);
      const low = await startBatch(
        coordinator.url,
        Array.from({ length: 30 }, () => ({ workflow: 'chain', version: '1', input: { steps: 1, stepMs: 30 } })),
      );
      await workerFor(mode, coordinator.url, prefix, { WORKER_CONCURRENCY: '1' });
      await eventually('the backlog to start', async () => (await countWhere(`status IN ('running', 'completed')`)) > 0);
      const [high] = await startBatch(coordinator.url, [{ workflow: 'chain', version: '1', input: { steps: 1, stepMs: 1 }, priority: 10 }]);
      const client = new WorkflowClient({ url: coordinator.url });
      expect(await client.waitForResult(high.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'completed' });
      // The claims recorded after the high-priority run existed: it is the first of them, or the second
      // when the one before it was already being made as it committed (it could not see it yet).
      const claims = await db.sql<{ run_id: string }>(
        `SELECT run_id FROM run_transitions
          WHERE to_status = 'running' AND id > (SELECT id FROM run_transitions WHERE run_id = $1 AND to_status = 'queued')
          ORDER BY id LIMIT 2`,
        [high.id],
      );
      expect(claims.map((claim) => claim.run_id)).toContain(high.id);
      expect(await countWhere(`status = 'queued' AND id = ANY($1)`, [low.map((run) => run.id)])).toBeGreaterThan(0);
    }, 60_000);
  });

  describe('Redis Streams partitions', () => {
    it('a worker started before the coordinator, with a smaller count, reads every partition and drains every run promptly', async () => {
      const prefix = testPrefix('partitions');
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const worker = await workerFor('redis-streams', url, prefix, { STREAM_PARTITIONS: '1' });
      const primary = worker.app.get<FailoverSubscriber>(SUBSCRIBER).primary as TransportSubscriber<StreamWakeup>;
      await coordinatorFor('redis-streams', prefix, { port, streamPartitions: 4 });
      expect(await redis.get(partitionCountKey(prefix))).toBe('4');
      const runs = await startBatch(
        url,
        Array.from({ length: 100 }, () => ({ workflow: 'echo', version: '1', input: 1 })),
      );
      await eventually('every run completed', async () => (await countWhere(`status = 'completed'`)) === runs.length, 15_000);
      expect((primary.consumer as StreamsConsumer).readStreams).toEqual(expect.arrayContaining(queueStreams(prefix, ['echo:1'], 4)));
      // Through its partition streams, not its HTTP backup.
      expect(worker.app.get<FailoverSubscriber>(SUBSCRIBER).failovers).toBe(0);
    }, 30_000);

    it('refuses a coordinator whose count differs from the running deployment, and lets a lone one change it', async () => {
      const prefix = testPrefix('partitions-agree');
      const first = await coordinatorFor('redis-streams', prefix, { streamPartitions: 4 });
      await expect(startCoordinator(db.url, { dispatch: 'redis-streams', redisPrefix: prefix, streamPartitions: 8 })).rejects.toThrow(
        /STREAM_PARTITIONS is 8, but this deployment's streams have 4 partitions and other coordinators are running/,
      );
      const same = await coordinatorFor('redis-streams', prefix, { streamPartitions: 4 });
      await same.close();
      await first.close();
      running.splice(0);
      await coordinatorFor('redis-streams', prefix, { streamPartitions: 8 });
      expect(await redis.get(partitionCountKey(prefix))).toBe('8');
      const [{ value }] = await db.sql<{ value: number }>(`SELECT value FROM engine_settings WHERE name = 'stream_partitions'`);
      expect(value).toBe(8);
    });
  });

  describe.each(['redis-zset', 'redis-streams'] as const)('%s memory', (mode) => {
    it('a queue nobody reads holds at most one wake-up per waiting run, however often republish runs', async () => {
      const prefix = testPrefix(`bounded-${mode}`);
      await coordinatorFor(mode, prefix, { republishIntervalMs: 50, republishAfterMs: 0, leaderCheckIntervalMs: 50 });
      const key = sortedSetKey(prefix, 'echo:1');
      const streams = queueStreams(prefix, ['echo:1'], 4);
      const held = async () =>
        mode === 'redis-zset' ? redis.zcard(key) : (await Promise.all(streams.map((stream) => redis.xlen(stream)))).reduce((a, b) => a + b, 0);
      const runs = await startBatch(
        (running[0] as RunningCoordinator).url,
        Array.from({ length: 20 }, () => ({ workflow: 'echo', version: '1', input: 1 })),
      );
      await eventually('the wake-ups published', async () => (await held()) === runs.length);
      // Redis loses them; republish tops the queue up again, to exactly one per run, round after round.
      await (mode === 'redis-zset' ? redis.del(key) : redis.del(...streams));
      await eventually('the wake-ups republished', async () => (await held()) === runs.length, 10_000);
      const rounds = Date.now() + 1_500;
      let most = 0;
      while (Date.now() < rounds) {
        most = Math.max(most, await held());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(most).toBe(runs.length);
    }, 30_000);
  });
});
