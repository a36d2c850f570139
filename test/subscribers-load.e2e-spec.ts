import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { WorkflowClient } from '@nest-durable/client';
import { queueStreams } from '@app/streams';
import { Redis } from 'ioredis';
import request from 'supertest';
import { SIDE_EFFECTS_TABLE } from './fixtures/side-effects.workflow';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

/** Redis subscribers under load and under faults, with real worker processes. */
describe('Redis subscribers with worker processes', () => {
  let db: TestDatabase;
  let redis: Redis;
  let coordinator: RunningCoordinator | undefined;

  beforeAll(async () => {
    db = await createTestDatabase('subscribers_load');
    await db.sql(SIDE_EFFECTS_TABLE);
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    await stopAllProcesses();
    await coordinator?.close();
    coordinator = undefined;
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, side_effects CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  async function startWorker(name: string, mode: string, prefix: string, env: Record<string, string> = {}) {
    const worker = new AppProcess(name, 'test/fixtures/fault-worker.main.ts', {
      COORDINATOR_URL: coordinator!.url,
      WORKER_ID: name,
      SUBSCRIBER: mode,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      REDIS_BLOCK_MS: '1000',
      // 8 runs at a time each (not 25): the busy queue then drains over several seconds, well past the quiet
      // runs' own latency, so "started before the busy queue drained" tells fairness from a fast drain.
      WORKER_CONCURRENCY: '8',
      SIDE_EFFECTS_URL: db.url,
      ...env,
    });
    await worker.waitForOutput(`ready ${name}`);
    return worker;
  }

  const startBatch = async (runs: object[]) => (await request(coordinator!.url).post('/v1/runs/batch').send({ runs }).expect(201)).body.runs as RunView[];

  describe.each(['redis-zset', 'redis-streams'] as const)('%s', (mode) => {
    it('4 workers drain 1,000 runs: each runs once, and a busy queue does not starve a quiet one', async () => {
      const prefix = testPrefix(`load-${mode}`);
      coordinator = await startCoordinator(db.url, { dispatch: mode, redisPrefix: prefix, streamPartitions: 4, republishIntervalMs: 3_600_000 });
      const workers = await Promise.all([1, 2, 3, 4].map((n) => startWorker(`${mode}-w${n}`, mode, prefix)));
      const busy = await startBatch(Array.from({ length: 1_000 }, (_, i) => ({ workflow: 'echo', version: '1', input: i })));
      const quiet = await startBatch(Array.from({ length: 10 }, () => ({ workflow: 'chain', version: '1', input: { steps: 1 } })));

      const client = new WorkflowClient({ url: coordinator.url });
      const done = await Promise.all([...busy, ...quiet].map((run) => client.waitForResult(run.id, { timeoutMs: 60_000 })));
      expect(done.filter((run) => run.status !== 'completed')).toEqual([]);

      const takes = await db.sql<{ run_id: string; count: string }>(
        `SELECT run_id, count(*) FROM run_transitions WHERE to_status = 'running' GROUP BY run_id HAVING count(*) <> 1`,
      );
      expect(takes).toEqual([]);
      const lastBusyStart = Math.max(...done.slice(0, 1_000).map((run) => Date.parse(run.startedAt!)));
      // Not after the busy queue drained: a tie at the millisecond is a take in the same statement (seen once in CI).
      for (const run of done.slice(1_000)) expect(Date.parse(run.startedAt!)).toBeLessThanOrEqual(lastBusyStart);
      const byWorker = await db.sql<{ worker_id: string }>(`SELECT DISTINCT worker_id FROM run_transitions WHERE to_status = 'running'`);
      expect(byWorker.length).toBeGreaterThan(1);
      for (const worker of workers) expect(worker.output).not.toContain('taking work over HTTP');
    }, 120_000);
  });

  it('kill -9 a Streams worker: another worker claims its pending messages and finishes the runs', async () => {
    const prefix = testPrefix('reclaim');
    coordinator = await startCoordinator(db.url, {
      dispatch: 'redis-streams',
      redisPrefix: prefix,
      streamPartitions: 2,
      claimMinIdleTimeMs: 1_000,
      heartbeatIntervalMs: 300,
      republishIntervalMs: 3_600_000,
    });
    const env = { STREAM_RECLAIM_IDLE_MS: '1000', HEARTBEAT_INTERVAL_MS: '300' };
    const doomed = await startWorker('streams-doomed', 'redis-streams', prefix, env);
    const runs = await startBatch(Array.from({ length: 4 }, () => ({ workflow: 'side-effects', version: '1', input: { steps: 4, stepMs: 300 } })));
    await eventually('every run started by the doomed worker', async () => {
      const rows = await db.sql<{ count: string }>(`SELECT count(DISTINCT run_id) FROM side_effects WHERE worker_id = 'streams-doomed'`);
      return Number(rows[0].count) === 4;
    });
    doomed.signal('SIGKILL');
    await doomed.exited;
    const streams = queueStreams(prefix, ['side-effects:1'], 2);
    const pendingCount = async () =>
      (await Promise.all(streams.map((stream) => redis.xpending(stream, 'workers') as Promise<[number]>))).reduce((sum, [n]) => sum + n, 0);
    expect(await pendingCount()).toBe(4);

    const rescuer = await startWorker('streams-rescuer', 'redis-streams', prefix, env);
    const client = new WorkflowClient({ url: coordinator.url });
    const done = await Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 30_000 })));
    expect(done.map((run) => run.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const takenBy = await db.sql<{ worker_id: string }>(
      `SELECT DISTINCT worker_id FROM run_transitions WHERE to_status = 'running' AND worker_id <> 'streams-doomed'`,
    );
    expect(takenBy.map((row) => row.worker_id)).toEqual(['streams-rescuer']);
    expect(rescuer.output).not.toContain('taking work over HTTP');
    await eventually('the reclaimed messages acknowledged', async () => (await pendingCount()) === 0);
  }, 60_000);
});
