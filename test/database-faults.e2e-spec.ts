import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowClient } from '@nest-durable/client';
import { Pool, type PoolClient } from 'pg';
import { eventually } from './support/poll';
import { PostgresServer } from './support/postgres-server';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

const MODES = [
  { dispatch: 'none', subscriber: 'http' },
  { dispatch: 'redis-streams', subscriber: 'redis-streams' },
] as const;

/**
 * A lost PostgreSQL connection fails the request or batch that held it and nothing else: the
 * coordinator (a real process) keeps serving and recovers once the database is back. The database is
 * a private server, crash-restarted (`pg_ctl restart -m immediate`) or with its backends terminated,
 * while a worker process runs a steady load and one coordinator transaction waits on a row lock (so a
 * connection is certainly checked out, mid-transaction, when it dies).
 */
describe.each(MODES)('a lost PostgreSQL connection (real processes, a private PostgreSQL; dispatch $dispatch)', ({ dispatch, subscriber }) => {
  let postgres: PostgresServer;
  let sql: Pool;
  let coordinator: AppProcess;
  let worker: AppProcess;
  let coordinatorUrl: string;
  let client: WorkflowClient;

  beforeAll(async () => {
    postgres = new PostgresServer(await freePort());
    await postgres.start();
    // The test's own connections die with the server too: a pool replaces them.
    sql = new Pool({ connectionString: postgres.url, max: 4, application_name: 'wf-test' });
    sql.on('error', () => undefined);
    const port = await freePort();
    coordinatorUrl = `http://127.0.0.1:${port}`;
    const redis = { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: testPrefix(`db-faults-${dispatch}`) };
    coordinator = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', {
      ...redis,
      DISPATCH: dispatch,
      // A message lost with the database's connections is published again soon.
      REPUBLISH_INTERVAL_MS: '500',
      REPUBLISH_AFTER_MS: '2000',
      DATABASE_URL: postgres.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_DISABLED: 'true',
      HEARTBEAT_INTERVAL_MS: '300',
      // Well above an outage here (about a second): a run is never taken over because of it.
      CLAIM_MIN_IDLE_TIME_MS: '10000',
      CLAIM_POLL_INTERVAL_MS: '200',
      LISTENER_PROBE_INTERVAL_MS: '500',
    });
    await coordinator.waitForOutput('listening on');
    worker = new AppProcess('worker', 'apps/worker/src/main.ts', {
      ...redis,
      SUBSCRIBER: subscriber,
      REDIS_BLOCK_MS: '1000',
      STREAM_RECLAIM_IDLE_MS: '10000',
      COORDINATOR_URL: coordinatorUrl,
      WORKER_ID: 'w-db-faults',
      WORKER_PORT: '0',
      WORKER_CONCURRENCY: '20',
      HEARTBEAT_INTERVAL_MS: '300',
      CLAIM_WAIT_MS: '1000',
      SHUTDOWN_GRACE_MS: '1000',
    });
    await worker.waitForOutput('taking work from');
    client = new WorkflowClient({ url: coordinatorUrl });
  }, 60_000);

  afterAll(async () => {
    await stopAllProcesses();
    await sql?.end();
    await postgres?.destroy();
  }, 60_000);

  it('survives a crash restart of PostgreSQL under load: same process, every run completes', async () => {
    await survives(() => postgres.crashRestart());
  }, 120_000);

  it("survives pg_terminate_backend of all the coordinator's connections under load", async () => {
    await survives(async () => {
      const terminated = await sql.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend' AND application_name <> 'wf-test'`,
      );
      expect(terminated.rowCount).toBeGreaterThan(1);
    });
  }, 120_000);

  it('survives PostgreSQL down longer than a write takes to retry: the worker holds its runs, none is taken over or counted a stall', async () => {
    const stallsBefore = await count('stalls > 0');
    const outputBefore = worker.output.length;
    await survives(async () => {
      // A run whose task ends while PostgreSQL is down: its record is a write the worker must retry (the load's runs
      // are short, and on a busy machine none may be left in flight when the server goes).
      const long = await client.start({ name: 'chain', version: '1' }, { steps: 2, stepMs: 1_000 });
      await eventually('a long run in flight', async () => (await client.get(long.id)).status === 'running');
      await postgres.crash();
      // Down until the worker has retried a write past its first second of backoff (it used to give the run up after
      // about three seconds, to be taken over, as a stall, once its claim went idle).
      await eventually(
        'the worker to retry a write for a while',
        async () => /retry 6 in|is no longer ours|could not report/.test(worker.output.slice(outputBefore)),
        30_000,
      );
      await postgres.start();
    });
    expect(await count('stalls > 0')).toBe(stallsBefore);
    const { rows } = await sql.query<{ count: string }>(`SELECT count(*) FROM run_transitions WHERE from_status = 'running' AND to_status = 'running'`);
    expect(Number(rows[0].count)).toBe(0);
  }, 120_000);

  /**
   * Puts load on the coordinator, breaks its connections with `fault` while one of its
   * transactions is waiting, and checks that the coordinator process lived through it, that the
   * request whose transaction died got an error answer, and that every run completes afterwards.
   */
  async function survives(fault: () => Promise<void>): Promise<void> {
    const pid = coordinator.pid;
    const outputBefore = { coordinator: coordinator.output.length, worker: worker.output.length };
    const completedBefore = await count(`status = 'completed'`);
    const load = startLoad();
    let blocked: Awaited<ReturnType<typeof blockedEvent>> | undefined;
    try {
      await eventually('runs completing under load', async () => (await count(`status = 'completed'`)) >= completedBefore + 30, 30_000);
      blocked = await blockedEvent();
      await eventually('runs in flight', async () => (await count(`status = 'running'`)) > 1);
      await fault();
      // The request whose transaction lost its connection gets an answer (an error), not a hang.
      const answer = await blocked.answer.catch((error: Error) => {
        throw new Error(`no answer from the coordinator (${error.message}; alive: ${coordinator.alive}):\n${coordinator.output.slice(-4000)}`);
      });
      expect(answer.status).toBe(503);
      expect(await answer.json()).toMatchObject({ reason: 'database_unavailable' });
      await blocked.unlock();
      await eventually('the coordinator to serve requests again', async () => (await fetch(`${coordinatorUrl}/health/ready`)).ok, 30_000);
      await blocked.approve();
    } finally {
      await blocked?.unlock();
      await load.stop();
    }
    await eventually('every run to complete', async () => (await count(`status <> 'completed'`)) === 0, 60_000);
    expect(load.started.length).toBeGreaterThan(30);
    expect(coordinator.alive).toBe(true);
    expect(coordinator.pid).toBe(pid);
    expect(coordinator.output.slice(outputBefore.coordinator)).not.toMatch(/uncaught|unhandled/i);
    // The worker's writes that failed with the connections were sent again: it gave up no run.
    expect(worker.output.slice(outputBefore.worker)).not.toMatch(/is no longer ours|could not report/);
  }

  /** Starts short runs (tasks, durable sleeps, in-process retries) continuously until stopped. */
  function startLoad(): { started: string[]; stop(): Promise<void> } {
    const started: string[] = [];
    let stopped = false;
    const starts = [
      () => client.start({ name: 'chain', version: '1' }, { steps: 3, stepMs: 10 }),
      () => client.start({ name: 'sleepy', version: '1' }, { ms: 50 }),
      () => client.start({ name: 'flaky', version: '1' }, { failTimes: 1 }),
    ];
    const loop = (async () => {
      for (let i = 0; !stopped; i++) {
        try {
          started.push((await starts[i % starts.length]()).id);
        } catch {
          // The database is down for a moment: this start failed (or its outcome is unknown; the
          // final check counts every run in the database either way).
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    return {
      started,
      stop: async () => {
        stopped = true;
        await loop;
      },
    };
  }

  /**
   * A client request whose transaction is checked out and waiting: the test holds the row lock of
   * a run that waits for an `approved` event and sends it that event, whose transaction waits for
   * the lock. `unlock` lets go of the lock; `approve` sends the event again, so the run completes.
   */
  async function blockedEvent() {
    const run = await client.start({ name: 'approval', version: '1' }, { timeoutMs: 600_000 });
    const approve = () =>
      fetch(`${coordinatorUrl}/v1/runs/${run.id}/events/approved`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ data: { ok: true } }),
      });
    const locker: PoolClient = await sql.connect();
    locker.on('error', () => undefined);
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [run.id]);
    const answer = approve();
    await eventually('the event transaction to wait for the row lock', async () => {
      const { rows } = await sql.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name <> 'wf-test'`);
      return rows.length > 0;
    });
    let locked = true;
    return {
      answer,
      unlock: async () => {
        if (!locked) return;
        locked = false;
        await locker.query('ROLLBACK').catch(() => undefined);
        locker.release(true);
      },
      approve: () => eventually('the event to be accepted', async () => (await approve()).status === 202, 30_000),
    };
  }

  async function count(where: string): Promise<number> {
    const { rows } = await sql.query<{ count: string }>(`SELECT count(*) FROM runs WHERE ${where}`);
    return Number(rows[0].count);
  }
});
