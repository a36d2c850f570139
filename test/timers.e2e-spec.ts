import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { WorkflowClient } from '@nest-durable/client';
import { streamKey } from '@app/streams';
import { Redis } from 'ioredis';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { LISTEN_PROBE, MIGRATIONS, RUN_TABLES } from '@app/persistence';
import { DueTimers1764800000000 } from '../libs/persistence/src/migrations/1764800000000-due-timers';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS } from '../apps/worker/src/workflows';
import { DueTimers } from '../apps/coordinator/src/timers/due-timers.service';
import { type RunningCoordinator, startCoordinator, startCustomWorker, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** Fails its first attempt; the workflow-level retry waits 300 ms before the second. */
const retriedOnce = defineWorkflow<Record<string, never>, { attempt: number }>({
  name: 'retried-once',
  version: '1',
  retry: { maxAttempts: 2, backoff: 'fixed', delayMs: 300 },
  handler: async (ctx) => {
    if (ctx.attempt === 1) throw new Error('first attempt fails');
    return { attempt: ctx.attempt };
  },
});

/**
 * Runs that become due by time start when they are due, not on the next safety-net poll: every poll
 * here is a minute away (the longest allowed) and the worker's claim long-polls as long, so a run
 * resuming within a couple of seconds was woken by its timer.
 */
describe('due timers', () => {
  let db: TestDatabase;
  let redis: Redis;
  const running: { close(): Promise<void> }[] = [];
  const FAR_POLLS = { claimPollIntervalMs: 60_000, outboxPollIntervalMs: 60_000, republishIntervalMs: 3_600_000 };
  /** Far more than a timer needs, far less than the polls. */
  const ON_TIME_MS = 2_000;

  beforeAll(async () => {
    db = await createTestDatabase('timers');
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

  const coordinator = async (overrides: Parameters<typeof startCoordinator>[1]) => {
    const started = await startCoordinator(db.url, { ...FAR_POLLS, ...overrides });
    running.push(started);
    return started;
  };

  /** How long after its (last) due time the run was claimed, by the database clock. */
  const lateness = async (runId: string) => {
    const [row] = await db.sql<{ ms: number }>(
      `SELECT (extract(epoch FROM (SELECT max(created_at) FROM run_transitions t WHERE t.run_id = r.id AND t.to_status = 'running')
                                   - r.due_at) * 1000)::float8 AS ms
         FROM runs r WHERE r.id = $1`,
      [runId],
    );
    return row.ms;
  };

  describe.each(['http', 'redis-zset', 'redis-streams'] as const)('%s', (mode) => {
    it('resumes a sleep, a runAt, a workflow-level retry wait and an event timeout on time', async () => {
      const prefix = testPrefix(`timers-${mode}`);
      const c = await coordinator({ dispatch: mode === 'http' ? 'none' : mode, redisPrefix: prefix, streamPartitions: 2 });
      const config = loadWorkerConfig({
        COORDINATOR_URL: c.url,
        SUBSCRIBER: mode,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        CLAIM_WAIT_MS: '60000',
      });
      running.push(await startCustomWorker(c.url, workerModuleOptions(config, [...EXAMPLE_WORKFLOWS, retriedOnce])));
      const client = new WorkflowClient({ url: c.url });

      const runs: RunView[] = await Promise.all([
        client.start({ name: 'sleepy', version: '1' }, { ms: 300 }),
        client.start({ name: 'echo', version: '1' }, 'later', { runAt: new Date(Date.now() + 500) }),
        client.start({ name: 'retried-once', version: '1' }, {}),
        client.start({ name: 'approval', version: '1' }, { timeoutMs: 400 }),
      ]);
      const finished = await Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
      expect(finished.map((run) => run.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
      expect(finished[2].output).toEqual({ attempt: 2 });
      expect(finished[3].output).toEqual({ timedOut: true });
      for (const run of runs) {
        const ms = await lateness(run.id);
        // Never before its due time (a negative lateness is a run resumed early), and soon after it.
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThan(ON_TIME_MS);
      }
    });
  });

  it('two coordinators on one database publish each run that becomes due once, on time', async () => {
    const prefix = testPrefix('timers-two');
    const options = { dispatch: 'redis-streams' as const, redisPrefix: prefix, streamPartitions: 2 };
    const [a, b] = [await coordinator(options), await coordinator(options)];
    const client = (c: RunningCoordinator) => new WorkflowClient({ url: c.url });
    const startedAt = Date.now();
    const runs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => client(i % 2 ? a : b).start({ name: 'echo', version: '1' }, i, { runAt: new Date(startedAt + 300 + 10 * i) })),
    );
    const read = async () => (await Promise.all([0, 1].map((n) => redis.xrange(streamKey(prefix, 'echo:1', n, 2), '-', '+')))).flat();
    await eventually('all 40 runs in the streams', async () => (await read()).length >= 40, 10_000);
    // Once every row is sent and deleted, nothing can publish again: count now.
    await eventually('the outbox to drain', async () => (await db.sql('SELECT 1 FROM outbox')).length === 0);
    const entries = await read();
    // An entry is `run <runId>`; its id starts with the Redis clock at XADD, in milliseconds.
    const published = entries.map(([id, fields]) => ({ runId: fields[1], at: Number(id.split('-')[0]) }));
    expect(published.map((entry) => entry.runId).sort()).toEqual(runs.map((run) => run.id).sort());
    const due = new Map(runs.map((run) => [run.id, Date.parse(run.runAt!)]));
    const publishLateness = published.map((entry) => entry.at - due.get(entry.runId)!);
    expect(Math.max(...publishLateness)).toBeLessThan(ON_TIME_MS);
  });

  describe('the schedule', () => {
    const httpStack = async (overrides: Parameters<typeof startCoordinator>[1] = {}) => {
      const c = await coordinator({ listenerProbeIntervalMs: 60_000, ...overrides });
      running.push(await startWorker(c.url, { claimWaitMs: 60_000, concurrency: 50 }));
      return { c, client: new WorkflowClient({ url: c.url }) };
    };
    const startedOnTime = async (client: WorkflowClient, runs: RunView[]) => {
      const finished = await Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
      expect(finished.every((run) => run.status === 'completed')).toBe(true);
      const late = await Promise.all(runs.map((run) => lateness(run.id)));
      expect(Math.max(...late)).toBeLessThan(ON_TIME_MS);
      // None started before its fire time (a negative lateness is a run started early).
      expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    };

    it('reloads after the LISTEN session reconnects: a due time it was not told of still fires on time', async () => {
      const { client } = await httpStack();
      const listeners = () =>
        db.sql<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND (query LIKE 'LISTEN%' OR query = $2)`, [db.name, LISTEN_PROBE]);
      const [before] = await eventually('the LISTEN session', async () => ((await listeners()).length > 0 ? listeners() : undefined));
      // Written with triggers off: no NOTIFY, as if it had been sent while the session was down.
      await db.sql(`SET session_replication_role = replica`);
      const [{ id }] = await db.sql<{ id: string }>(
        `INSERT INTO runs (id, workflow, version, queue, status, input, due_at)
         VALUES ('0195e0b6-0000-7000-8000-00000000a001', 'echo', '1', 'echo:1', 'queued', '"silent"', now() + interval '1500 milliseconds')
         RETURNING id`,
      );
      await db.sql(`RESET session_replication_role`);
      await db.sql('SELECT pg_terminate_backend($1)', [before.pid]);
      await startedOnTime(client, [await client.get(id)]);
    });

    it('reads due times beyond its horizon in time, on its periodic reload', async () => {
      const { c, client } = await httpStack({ timerHorizonMs: 1_000 });
      const run = await client.start({ name: 'echo', version: '1' }, 'far', { runAt: new Date(Date.now() + 2_500) });
      expect(c.app.get(DueTimers).held).toBe(0); // beyond the horizon when it was announced
      await startedOnTime(client, [run]);
    });

    it('holds at most TIMER_MAX_ENTRIES due times, and still starts every run on time', async () => {
      const { c, client } = await httpStack({ timerMaxEntries: 10 });
      const startedAt = Date.now();
      const batch = Array.from({ length: 60 }, (_, i) => ({ workflow: 'echo', version: '1', input: i, runAt: new Date(startedAt + 500 + 20 * i) }));
      const { body } = await request(c.url).post('/v1/runs/batch').send({ runs: batch }).expect(201);
      const runs = body.runs as RunView[];
      expect(c.app.get(DueTimers).held).toBeLessThanOrEqual(10);
      await startedOnTime(client, runs);
    });
  });

  it('migrates a database that already has the later migrations (an upgrade from a release without the timers)', async () => {
    const upgraded = await createTestDatabase('timers_upgrade');
    try {
      const previous = new DataSource({ type: 'postgres', url: upgraded.url, migrations: MIGRATIONS.filter((m) => m !== DueTimers1764800000000) });
      await previous.initialize();
      await previous.runMigrations({ transaction: 'each' }).finally(() => previous.destroy());
      running.push(await startCoordinator(upgraded.url));
      const objects = await upgraded.sql<{ name: string }>(
        `SELECT tgname::text AS name FROM pg_trigger WHERE tgname LIKE 'runs_notify_due%'
          UNION ALL SELECT indexname::text FROM pg_indexes WHERE indexname = 'runs_due_idx' ORDER BY 1`,
      );
      expect(objects.map((o) => o.name)).toEqual(['runs_due_idx', 'runs_notify_due_on_insert', 'runs_notify_due_on_update']);
    } finally {
      for (const app of running.splice(0).reverse()) await app.close();
      await upgraded.drop();
    }
  });
});
