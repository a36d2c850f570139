import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { WorkflowClient } from '@nest-durable/client';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { AppProcess, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

const HEARTBEAT_INTERVAL_MS = 200;
const CLAIM_MIN_IDLE_TIME_MS = 1_000;

/**
 * A run that keeps killing its workers ends, failed with reason `stalled`, in every mode; other runs
 * keep flowing meanwhile. Real worker processes, restarted as they die.
 */
describe('the stall limit (real worker processes)', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator | undefined;
  let supervising = false;
  let exits = 0;

  beforeAll(async () => {
    db = await createTestDatabase('stalls');
  });

  afterEach(async () => {
    supervising = false;
    await stopAllProcesses();
    await coordinator?.close();
    coordinator = undefined;
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters CASCADE`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  /**
   * Keeps a worker process running under `name`: when one exits on its own, the next starts (without
   * waiting for it to be ready: it may take the poison run and die before it says so).
   */
  async function supervise(name: string, env: Record<string, string>): Promise<void> {
    let generation = 0;
    const launch = (): AppProcess => {
      const id = `${name}-${++generation}`;
      const worker = new AppProcess(id, 'test/fixtures/fault-worker.main.ts', {
        COORDINATOR_URL: coordinator!.url,
        WORKER_ID: id,
        HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
        STREAM_RECLAIM_IDLE_MS: String(CLAIM_MIN_IDLE_TIME_MS),
        CLAIM_WAIT_MS: '1000',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_BLOCK_MS: '500',
        SHUTDOWN_GRACE_MS: '500',
        ...env,
      });
      void worker.exited.then(() => {
        if (!supervising) return;
        exits++;
        launch();
      });
      return worker;
    };
    await launch().waitForOutput(`ready ${name}-1`);
  }

  async function scenario(mode: 'http' | 'redis-zset' | 'redis-streams', options: { maxStalls: number; worker?: Record<string, string> }) {
    const prefix = testPrefix(`stalls-${mode}`);
    coordinator = await startCoordinator(db.url, {
      dispatch: mode === 'http' ? 'none' : mode,
      redisPrefix: prefix,
      streamPartitions: 2,
      maxStalls: options.maxStalls,
      heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
      claimMinIdleTimeMs: CLAIM_MIN_IDLE_TIME_MS,
      claimPollIntervalMs: 200,
      republishIntervalMs: 300,
      republishAfterMs: 1_000,
      leaderCheckIntervalMs: 200,
    });
    supervising = true;
    exits = 0;
    const env = { SUBSCRIBER: mode, REDIS_PREFIX: prefix, ...options.worker };
    await Promise.all([supervise('a', env), supervise('b', env)]);
    // Other work, on a shard of its own, served by a worker that does not share a process with the
    // poison run (runs executing beside it die with it, and would count stalls of their own).
    const steady = new AppProcess('steady', 'test/fixtures/fault-worker.main.ts', {
      ...env,
      COORDINATOR_URL: coordinator.url,
      WORKER_ID: 'steady',
      WORKER_SHARDS: 'steady',
      HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
      STREAM_RECLAIM_IDLE_MS: String(CLAIM_MIN_IDLE_TIME_MS),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_BLOCK_MS: '500',
    });
    await steady.waitForOutput('ready steady');
    const client = new WorkflowClient({ url: coordinator.url });
    // Started in a batch, so never handed to a waiting claim: with claims of 1 s, a single start can take a claim
    // at its deadline and give the run back at once (docs/architecture.md, "Handing a new run to a waiting
    // claim"), which adds a release to the history this test reads exactly.
    const [poison] = (
      await request(coordinator.url)
        .post('/v1/runs/batch')
        .send({ runs: [{ workflow: 'crash', version: '1', input: {} }] })
        .expect(201)
    ).body.runs as RunView[];
    const others: RunView[] = [];
    // Other work keeps arriving while the poison run kills workers.
    for (let round = 0; round < 5; round++) {
      const batch = await request(coordinator.url)
        .post('/v1/runs/batch')
        .send({ runs: Array.from({ length: 10 }, () => ({ workflow: 'chain', version: '1', input: { steps: 2 }, shard: 'steady' })) })
        .expect(201);
      others.push(...(batch.body.runs as RunView[]));
    }
    const failed = await client.waitForResult(poison.id, { timeoutMs: 60_000 });
    const done = await Promise.all(others.map((run) => client.waitForResult(run.id, { timeoutMs: 30_000 })));
    expect(done.filter((run) => run.status !== 'completed')).toEqual([]);
    expect(steady.alive).toBe(true);
    return { failed, client };
  }

  it.each(['http', 'redis-zset', 'redis-streams'] as const)(
    '%s: after MAX_STALLS takeovers the run is failed as stalled, and other runs kept flowing',
    async (mode) => {
      const { failed } = await scenario(mode, { maxStalls: 2 });
      expect(failed).toMatchObject({ status: 'failed', stalls: 2, error: { name: 'RunStalledError', reason: 'stalled' } });
      // The first execution and one per takeover, each killed its worker; no fourth.
      expect(exits).toBe(3);
      const history = await db.sql<{ from_status: string; to_status: string }>(
        'SELECT from_status, to_status FROM run_transitions WHERE run_id = $1 ORDER BY id',
        [failed.id],
      );
      expect(history.map((t) => `${t.from_status}>${t.to_status}`)).toEqual([
        'null>queued',
        'queued>running',
        'running>running',
        'running>running',
        'running>failed',
      ]);
    },
    90_000,
  );

  it('redis-streams: a wake-up delivered more than MAX_DELIVERIES times is dead-lettered and its run failed as stalled', async () => {
    const { failed } = await scenario('redis-streams', { maxStalls: 50, worker: { MAX_DELIVERIES: '1' } });
    expect(failed).toMatchObject({ status: 'failed', error: { name: 'RunStalledError', reason: 'stalled' } });
    expect(failed.stalls).toBeLessThan(50);
    const letters = await db.sql<{ origin: string; run_id: string; reason: string }>('SELECT origin, run_id, reason FROM dead_letters');
    expect(letters).toContainEqual({ origin: 'stream', run_id: failed.id, reason: 'delivered_too_often' });
    expect(failed.error?.message).toMatch(/delivered \d+ times/);
  }, 90_000);
});
