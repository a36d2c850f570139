import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { WorkflowClient } from '@nest-durable/client';
import { type FailoverSubscriber, SUBSCRIBER } from '@nest-durable/worker';
import { queueStreams, sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import { startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { RedisServer, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

type RedisMode = 'redis-zset' | 'redis-streams';

/**
 * What a Redis outage costs, against a redis-server of the test's own that is killed (its data, never persisted,
 * is gone) and started again on the same port.
 */
describe('Redis outages', () => {
  let db: TestDatabase;
  let server: RedisServer;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('redis_outages');
    server = new RedisServer(await freePort());
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await server.stop();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox CASCADE`);
  });

  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  async function coordinator(mode: RedisMode, prefix: string, overrides: Parameters<typeof startCoordinator>[1] = {}) {
    const started = await startCoordinator(db.url, {
      dispatch: mode,
      redisUrl: server.url,
      redisPrefix: prefix,
      streamPartitions: 2,
      leaderCheckIntervalMs: 100,
      ...overrides,
    });
    running.push(started);
    return started;
  }

  async function worker(mode: RedisMode, prefix: string, coordinatorUrl: string) {
    const started = await startWorker(coordinatorUrl, {
      subscriber: mode,
      redisUrl: server.url,
      redisPrefix: prefix,
      redisBlockMs: 500,
      claimWaitMs: 60_000,
      concurrency: 50,
    });
    running.push(started);
    return started.app.get<FailoverSubscriber>(SUBSCRIBER);
  }

  /** Wake-ups Redis holds for `queue`, by a client of the test's own. */
  async function heldInRedis(mode: RedisMode, prefix: string, queue: string): Promise<number> {
    const redis = new Redis(server.url, { maxRetriesPerRequest: 0 });
    try {
      if (mode === 'redis-zset') return await redis.zcard(sortedSetKey(prefix, queue));
      const lengths = await Promise.all(queueStreams(prefix, [queue], 2).map((stream) => redis.xlen(stream)));
      return lengths.reduce((sum, length) => sum + length, 0);
    } finally {
      redis.disconnect();
    }
  }

  describe.each(['redis-zset', 'redis-streams'] as const)('%s', (mode) => {
    it('republishes what an empty restart of redis-server lost as soon as the coordinator reconnects: the wake-ups it held, and the publishes that failed meanwhile', async () => {
      await server.start();
      const prefix = testPrefix(`outage-${mode}`);
      // Neither the republish interval nor a publish retry comes round within this test: only the reconnect can.
      const c = await coordinator(mode, prefix, { republishIntervalMs: 60_000, outboxRetryBaseMs: 30_000, outboxRetryMaxMs: 60_000 });
      const client = new WorkflowClient({ url: c.url });
      // No worker yet: the queued runs' wake-ups sit in Redis when it dies.
      const queued = await Promise.all(Array.from({ length: 20 }, (_, i) => client.start({ name: 'echo', version: '1' }, i)));
      await eventually('the wake-ups in Redis', async () => (await heldInRedis(mode, prefix, 'echo:1')) === queued.length);
      const scheduled = await Promise.all(
        Array.from({ length: 10 }, (_, i) => client.start({ name: 'echo', version: '1' }, `later-${i}`, { runAt: new Date(Date.now() + 1_000) })),
      );

      await server.stop();
      const failed = () => db.sql(`SELECT 1 FROM outbox WHERE status = 'retry' AND run_id = ANY($1)`, [scheduled.map((run) => run.id)]);
      await eventually('the due runs to fail to publish', async () => (await failed()).length === scheduled.length, 10_000);
      await server.start();
      await worker(mode, prefix, c.url);
      // From the worker's start on (booting it takes seconds on a loaded machine, and is no part of what is measured).
      const workerReadyAt = Date.now();

      const finished = await Promise.all([...queued, ...scheduled].map((run) => client.waitForResult(run.id, { timeoutMs: 30_000 })));
      expect(finished.map((run) => run.status)).toEqual(finished.map(() => 'completed'));
      const finishedAt = finished.map((run) => Date.parse(run.finishedAt!));
      // Echo runs take ms: the republish interval (60 s) or the retry of a failed publish (30 s after it failed, just
      // before the restart) would leave some unfinished for over 20 s.
      expect(Math.max(...finishedAt) - workerReadyAt).toBeLessThan(10_000);
    }, 60_000);

    it('resumes sleeping runs while redis-server is down as punctually as over HTTP: the backup claims while Redis is probed', async () => {
      await server.start();
      const prefix = testPrefix(`down-${mode}`);
      const c = await coordinator(mode, prefix);
      const subscriber = await worker(mode, prefix, c.url);
      const client = new WorkflowClient({ url: c.url });
      await server.stop();
      await eventually('the worker on its HTTP backup', async () => subscriber.usingBackup, 10_000);

      // Due within the first probe after the failover, which held every claim back for its 2 s while a probe
      // waited for the refused connection's `ready` (the sleeps are spread over half a second, not the issue's
      // 1.2-2.3 s: a run due after that probe ended was not held back, and would hide the wait in a median).
      const runs: RunView[] = await Promise.all(Array.from({ length: 30 }, (_, i) => client.start({ name: 'sleepy', version: '1' }, { ms: 1_000 + 17 * i })));
      const finished = await Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 30_000 })));
      expect(finished.map((run) => run.status)).toEqual(runs.map(() => 'completed'));
      expect(subscriber.usingBackup).toBe(true);
      // When the handler resumed (the worker's clock) minus the sleep's wake time (the database's; one machine).
      const rows = await db.sql<{ lateness: number }>(
        `SELECT (r.output->>'wokeAt')::float8 - extract(epoch FROM t.wake_at) * 1000 AS lateness
           FROM runs r JOIN tasks t ON t.run_id = r.id AND t.kind = 'sleep' WHERE r.id = ANY($1)`,
        [runs.map((run) => run.id)],
      );
      const lateness = rows.map((row) => Number(row.lateness)).sort((a, b) => a - b);
      expect(lateness).toHaveLength(runs.length);
      // The median, which a few runs slowed by a loaded machine do not move. Over HTTP it is tens of ms (20 ms with
      // the machine loaded). Blocking each claim on a probe of Redis made it 700 ms in both modes, and the fastest
      // run over 400 ms late.
      expect(lateness[Math.floor(lateness.length / 2)]).toBeLessThan(300);
    }, 60_000);
  });
});
