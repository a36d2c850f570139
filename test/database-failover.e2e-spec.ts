import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LISTEN_PROBE } from '@app/persistence';
import { checkRuns } from '../scripts/soak/checks';
import { TOKENS } from '../scripts/soak/cluster';
import { RunStarter } from '../scripts/soak/load';
import { LONG_STEP_MS, type PlannedRun, planRuns } from '../scripts/soak/plan';
import { readState } from '../scripts/soak/state';
import { Violations } from '../scripts/soak/violations';
import { eventually } from './support/poll';
import { AppProcess, connectionsTo, freePort, stopAllProcesses } from './support/processes';
import { ReplicatedPostgres, sql } from './support/replicated-postgres';

const DATABASE = 'failover';
/** 150 runs of the soak's workflow (3–7 tasks, some with a durable sleep; not its long runs, which only lengthen the suite), 25 a second. */
const RUNS = 150;
const RATE = 25;
/** Far above the outage: a run whose worker could not heartbeat meanwhile is not taken over, so no task runs twice. */
const CLAIM_MIN_IDLE_TIME_MS = 30_000;
const ONE_TASK = { seed: 7, steps: 1, stepMs: 10, sleepMs: 0 };

/** Service must be back this soon after the primary stalls (see docs/reliability.md for what bounds it). */
const STALL_RECOVERY_MS = 30_000;
/** Starts sent at a time during the stall: above the coordinator's sessions (DATABASE_POOL_SIZE 6, and 3 of the claim pool). */
const STALL_LOAD_CONCURRENCY = 12;

/**
 * A PostgreSQL failover under load, all real: a primary with a synchronous standby (streaming replication,
 * synchronous_commit on), a coordinator process whose DATABASE_URL names both servers, and a worker process
 * running the soak's workflow (each task appends to a journal first, so repeats are counted). Mid-load the primary
 * is killed (`kill -9` of all its processes) and the standby promoted (`pg_promote()`: the test is the HA manager).
 * Each case starts from a primary with its standby attached (attaching it again where a case before left one node).
 */
describe('a PostgreSQL failover (kill -9 of the primary, its synchronous standby promoted) under load', () => {
  let pair: ReplicatedPostgres;
  let coordinator: AppProcess;
  let worker: AppProcess;
  let coordinatorUrl: string;
  const journalDir = mkdtempSync(join(tmpdir(), 'wf-failover-'));

  beforeAll(async () => {
    pair = await ReplicatedPostgres.start();
    await sql(pair.primaryUrl('postgres'), `CREATE DATABASE ${DATABASE}`);
    const port = await freePort();
    coordinatorUrl = `http://127.0.0.1:${port}`;
    coordinator = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', {
      DATABASE_URL: pair.url(DATABASE),
      // Small pools, so that sessions left hanging on a stalled primary would exhaust them (the third case).
      DATABASE_POOL_SIZE: '6',
      PORT: String(port),
      HOST: '127.0.0.1',
      CLIENT_TOKEN: TOKENS.client,
      WORKER_TOKEN: TOKENS.worker,
      HEARTBEAT_INTERVAL_MS: '300',
      CLAIM_MIN_IDLE_TIME_MS: String(CLAIM_MIN_IDLE_TIME_MS),
      CLAIM_POLL_INTERVAL_MS: '200',
      LISTENER_PROBE_INTERVAL_MS: '500',
      LEADER_CHECK_INTERVAL_MS: '500',
    });
    // The worker starts beside it (it retries until the coordinator answers).
    worker = new AppProcess('worker', 'test/fixtures/fault-worker.main.ts', {
      COORDINATOR_URL: coordinatorUrl,
      WORKER_TOKEN: TOKENS.worker,
      WORKER_ID: 'failover-w1',
      SUBSCRIBER: 'http',
      WORKER_CONCURRENCY: '20',
      HEARTBEAT_INTERVAL_MS: '300',
      CLAIM_WAIT_MS: '1000',
      SHUTDOWN_GRACE_MS: '1000',
      SOAK_JOURNAL_DIR: journalDir,
    });
    await Promise.all([coordinator.waitForOutput('listening on', 60_000), worker.waitForOutput('ready failover-w1', 60_000)]);
  }, 90_000);

  afterAll(async () => {
    await stopAllProcesses();
    await pair?.destroy();
    rmSync(journalDir, { recursive: true, force: true });
  }, 60_000);

  it('keeps every acknowledged start and task result, records each task once, completes every run, and serves again without a restart', async () => {
    await replicating();
    const violations = new Violations();
    const plan = planRuns('failover', RUNS, RATE, 35).filter((run) => run.input.stepMs < LONG_STEP_MS);
    const starter = new RunStarter(coordinatorUrl, plan, violations);
    const load = new AbortController();
    const starting = starter.run(Date.now(), load.signal);
    const pid = coordinator.pid;
    try {
      // Mid-load: a third of the runs acknowledged, and some of them running (task results being written).
      await eventually('runs in flight mid-load', async () => starter.ids.size >= RUNS / 3 && (await count(`status = 'running'`)) > 0, 30_000);
      // The primary stops sending WAL just before the kill, so that the primary dies holding commits the standby
      // lacks (on loopback it is otherwise never behind): synchronous commit must not have acknowledged them.
      const pausedAt = Date.now();
      const acknowledgedBeforePause = starter.ids.size;
      await pair.pauseReplication();
      await eventually('commits on the primary that the standby lacks', () => standbyLacksCommits(() => starter.ids.size - acknowledgedBeforePause), 15_000);
      const acknowledgedBeforeKill = new Map(starter.ids);
      await pair.failover();
      const probe = await firstStartAfter();
      plan.push(probe.run);
      const timeWithoutServiceMs = probe.acknowledgedAt - pausedAt;
      if (process.env.FAILOVER_REPORT) process.stdout.write(`time without service: ${timeWithoutServiceMs} ms\n`);
      await starting;
      // Checked first: a start acknowledged and then lost (without synchronous commit) would also never finish.
      const [{ lostStarts }] = await sql<{ lostStarts: number }>(
        pair.primaryUrl(DATABASE),
        `SELECT $1::int - count(*)::int AS "lostStarts" FROM runs WHERE id = ANY($2::uuid[])`,
        [acknowledgedBeforeKill.size, [...acknowledgedBeforeKill.values()]],
      );
      expect({ lostStarts }).toEqual({ lostStarts: 0 });
      await eventually('every run to finish', async () => (await count(`status IN ('completed', 'failed', 'cancelled')`)) === plan.length, 60_000);

      const state = await readState(pair.primaryUrl(DATABASE), journalDir);
      const figures = checkRuns(plan, state, violations);
      // Every start acknowledged before the kill is the very run it was (not one re-created by a retried start).
      const idOf = new Map(state.runs.map((run) => [run.key, run.id]));
      const lost = [...acknowledgedBeforeKill].filter(([key, id]) => idOf.get(key) !== id);
      expect({ violations: violations.list, lost }).toEqual({ violations: [], lost: [] });
      // A task result acknowledged and then lost would have its task executed again (the run replays it).
      expect(figures.stepsExecutedTwice).toBe(0);
      expect(figures.completedRight).toBe(plan.length);
      expect(timeWithoutServiceMs).toBeLessThan(20_000);
    } finally {
      load.abort();
      await starting;
    }
    expect(coordinator.pid).toBe(pid);
    expect(coordinator.alive).toBe(true);
    expect(coordinator.output).not.toMatch(/uncaught|unhandled/i);
    expect(worker.output).not.toMatch(/is no longer ours|could not report/);
  }, 120_000);

  it('leaves a primary that turned read-only (SQLSTATE 25006) for the promoted standby: every session moves, starts are acknowledged again', async () => {
    await replicating();
    const oldPrimary = pair.primaryUrl(DATABASE);
    await pair.promoteStandbyLeavingPrimaryReadOnly();
    let [streak, attempt] = [0, 0];
    await eventually(
      'ten starts in a row acknowledged after the switchover',
      async () => {
        streak = (await start(`switchover-${attempt++}`)) ? streak + 1 : 0;
        return streak >= 10;
      },
      30_000,
    );
    // Nothing of the coordinator stays on the read-only server: its pools, its LISTEN session and its leader lock moved.
    // Counted from the coordinator's own sockets, not from the server's pg_stat_activity: a write that began on the old
    // primary before its session took the read-only setting, and committed once the standby was promoted, waits there
    // for a synchronous standby that is gone (and a write queued behind its row locks with it); PostgreSQL does not
    // look at the client's socket during that wait, so the backend stays after the coordinator closed its end.
    const oldPort = Number(new URL(oldPrimary).port);
    let held: string[] = [];
    await eventually(
      'no coordinator connection to the read-only server',
      async () => {
        held = await connectionsTo(coordinator.pid, oldPort);
        return held.length === 0;
      },
      15_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; still open:\n${held.join('\n')}`);
    });
    // The same count sees the sessions on the new primary: zero above is not a probe that sees nothing.
    expect((await connectionsTo(coordinator.pid, Number(new URL(pair.primaryUrl(DATABASE)).port))).length).toBeGreaterThan(0);
    await eventually(
      'the LISTEN session and the leader lock on the new primary',
      async () => {
        const [row] = await sql<{ listening: number; locks: number }>(
          pair.primaryUrl(DATABASE),
          `SELECT count(*) FILTER (WHERE query LIKE 'LISTEN%' OR query = $1)::int AS listening,
                  (SELECT count(*)::int FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'wf-coordinator %') AS locks
             FROM pg_stat_activity WHERE application_name LIKE 'wf-coordinator %'`,
          [LISTEN_PROBE],
        );
        return row.listening === 1 && row.locks > 0;
      },
      15_000,
    );
    await eventually('every run to finish on the new primary', async () => (await count(`status NOT IN ('completed', 'failed', 'cancelled')`)) === 0, 30_000);
    expect(await count(`status <> 'completed'`)).toBe(0);
    expect(coordinator.output).not.toMatch(/uncaught|unhandled/i);
  }, 90_000);

  it('leaves a primary that stalls with its connections open (a partition, a dead host as TCP sees it) once the standby is promoted: starts are acknowledged again within a bound', async () => {
    await replicating();
    // More starts at a time than the coordinator has sessions (besides the worker's claims, heartbeats and task
    // results): when the primary stalls, every session is caught in a statement on it, and none comes back unless
    // the coordinator closes them.
    const load = new AbortController();
    const starting = Promise.all(
      Array.from({ length: STALL_LOAD_CONCURRENCY }, async (_, loop) => {
        for (let i = 0; !load.signal.aborted; i++) await start(`stall-load-${loop}-${i}`);
      }),
    );
    try {
      await eventually('starts acknowledged under load', () => start('stall-before'), 30_000);
      const stalledAt = Date.now();
      await pair.stallPrimaryAndPromote();
      const probe = await firstStartAfter('stall-probe', STALL_RECOVERY_MS + 10_000);
      const timeWithoutServiceMs = probe.acknowledgedAt - stalledAt;
      if (process.env.FAILOVER_REPORT) process.stdout.write(`time without service after a stall: ${timeWithoutServiceMs} ms\n`);
      expect(timeWithoutServiceMs).toBeLessThan(STALL_RECOVERY_MS);
    } finally {
      load.abort();
      await starting;
    }
    await eventually('every run to finish on the new primary', async () => (await count(`status NOT IN ('completed', 'failed', 'cancelled')`)) === 0, 60_000);
    expect(coordinator.output).not.toMatch(/uncaught|unhandled/i);
  }, 150_000);

  /** The pair as every case starts: a primary with its synchronous standby, and the coordinator serving on it. */
  async function replicating(): Promise<void> {
    if (pair.replicating) return;
    // The node left over comes back as the primary's synchronous standby (the primary stops for the copy: an outage).
    await pair.attachStandby();
    await eventually('a start acknowledged with the standby attached', () => start(`attached-${Date.now()}`), 30_000);
  }

  /**
   * Whether the primary holds commits its paused standby lacks: waiting for the standby's acknowledgement
   * (synchronous commit), or acknowledged without it (asynchronous: starts acknowledged since the pause).
   */
  async function standbyLacksCommits(acknowledgedSincePause: () => number): Promise<boolean> {
    const [standby] = await sql<{ lsn: string }>(pair.standbyUrl('postgres'), 'SELECT pg_last_wal_receive_lsn()::text AS lsn');
    const [primary] = await sql<{ ahead: boolean; waiting: number }>(
      pair.primaryUrl('postgres'),
      `SELECT pg_current_wal_flush_lsn() > $1::pg_lsn AS ahead,
              (SELECT count(*)::int FROM pg_stat_activity WHERE wait_event = 'SyncRep') AS waiting`,
      [standby.lsn],
    );
    return primary.ahead && (primary.waiting >= 2 || acknowledgedSincePause() >= 5);
  }

  /** Sends one start (a run of one short task) again and again until the coordinator acknowledges it: service is back. */
  async function firstStartAfter(key = 'failover-probe', timeoutMs = 30_000): Promise<{ run: PlannedRun; acknowledgedAt: number }> {
    const run: PlannedRun = { key, input: ONE_TASK, atMs: 0 };
    let acknowledgedAt = 0;
    await eventually(
      'a start acknowledged after the failover',
      async () => {
        const acknowledged = await start(run.key);
        acknowledgedAt = Date.now();
        return acknowledged;
      },
      timeoutMs,
    );
    return { run, acknowledgedAt };
  }

  /** POST /v1/runs of a one-task run with idempotency key `key`: whether the coordinator acknowledged it. */
  async function start(key: string): Promise<boolean> {
    const response = await fetch(`${coordinatorUrl}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.client}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow: 'soak', version: '1', input: ONE_TASK, idempotencyKey: key }),
      signal: AbortSignal.timeout(10_000),
    }).catch(() => undefined);
    return response?.status === 201 || response?.status === 200;
  }

  async function count(where: string, url = pair.primaryUrl(DATABASE)): Promise<number> {
    const [row] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM runs WHERE ${where}`);
    return row.n;
  }
});
