import type { SqlExecutor } from '../database';

/**
 * The test clock of @nest-durable/testing: a throwaway database whose now() and clock_timestamp() run ahead of the
 * server's by an offset the test moves forward (env.skipTime). Never installed in a production database: only
 * the test kit calls installTestClock, on a database it created and drops.
 *
 * Every due time of the engine (sleeps, runAt, retry waits, event and child timeouts, schedules' fire times, claim
 * idleness) is written and compared with the database clock, in statements, PL/pgSQL functions, column defaults
 * and trigger conditions that say `now()` or `clock_timestamp()` unqualified. The database's search_path puts
 * this schema before pg_catalog (named explicitly, so it is not searched first as it is by default), and `public`
 * first so tables are still created there: an unqualified now() resolves to durable_test_clock.now(). Column
 * defaults and trigger conditions bind the function when they are created, so the clock is installed before the
 * migrations run.
 */
export const TEST_CLOCK_SCHEMA = 'durable_test_clock';

/** In the order they run, one transaction; the database must have no other session yet (the search_path applies to new ones). */
const INSTALL_TEST_CLOCK = [
  `CREATE SCHEMA durable_test_clock`,
  // One row (the key can only be true): the offset every session reads.
  `CREATE TABLE durable_test_clock.offset_ms (one boolean PRIMARY KEY DEFAULT true CHECK (one), ms float8 NOT NULL DEFAULT 0)`,
  `INSERT INTO durable_test_clock.offset_ms DEFAULT VALUES`,
  // STABLE like pg_catalog.now(): the transaction's start, moved by the offset as the statement reads it.
  `CREATE FUNCTION durable_test_clock.now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
     AS $$ SELECT pg_catalog.now() + (SELECT ms FROM durable_test_clock.offset_ms) * interval '1 millisecond' $$`,
  `CREATE FUNCTION durable_test_clock.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE
     AS $$ SELECT pg_catalog.clock_timestamp() + (SELECT ms FROM durable_test_clock.offset_ms) * interval '1 millisecond' $$`,
  `DO $$ BEGIN
     EXECUTE format('ALTER DATABASE %I SET search_path = public, durable_test_clock, pg_catalog', current_database());
   END $$`,
];

/**
 * Installs the test clock in the database `db` is connected to (see TEST_CLOCK_SCHEMA), before anything else
 * connects to it. Sessions opened afterwards see the shifted clock. In one transaction: a failure leaves nothing.
 */
export async function installTestClock(db: SqlExecutor): Promise<void> {
  await db.query('BEGIN');
  try {
    for (const statement of INSTALL_TEST_CLOCK) await db.query(statement);
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK');
    throw error;
  }
}

const ADVANCE_TEST_CLOCK_TO = `UPDATE durable_test_clock.offset_ms
    SET ms = ms + greatest(0, $1::float8 - extract(epoch FROM durable_test_clock.clock_timestamp()) * 1000)
  RETURNING (extract(epoch FROM durable_test_clock.clock_timestamp()) * 1000)::float8 AS now`;

/**
 * Moves the test clock forward so it reads at least `at` (epoch ms) now; never back (a clock that went back would
 * make due times come twice). Returns the clock after the move. One row, updated in one statement: concurrent
 * moves serialise on its lock and each keeps the later time; a transaction already running keeps its now().
 */
export async function advanceTestClockTo(db: SqlExecutor, at: number): Promise<number> {
  const [row] = await db.query<{ now: number }>(ADVANCE_TEST_CLOCK_TO, [at]);
  return row.now;
}

const NEXT_DUE_TIME = `SELECT least(
    (SELECT min(due_at) FROM runs
      WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity' AND due_at > now()),
    (SELECT min(next_run_at) FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL)
  ) AS at`;

/**
 * The soonest time a run comes due (a sleep ends, runAt, a retry wait, an event or child timeout) or a schedule
 * fires, after the test clock's now; null when nothing waits for a time. Epoch ms. A read on one snapshot: the
 * test kit asks again after each step it takes.
 */
export async function nextDueTime(db: SqlExecutor): Promise<number | null> {
  const [row] = await db.query<{ at: Date | null }>(NEXT_DUE_TIME);
  return row.at === null ? null : row.at.getTime();
}

const UNSETTLED_WORK = `(SELECT id::text AS id, workflow, status AS state FROM runs
     WHERE status = 'running'
        OR (status IN ('queued', 'waiting') AND due_at <= now())
     ORDER BY id
     LIMIT $1)
   UNION ALL
   (SELECT id::text, workflow, 'schedule due' FROM schedules
     WHERE NOT paused AND next_run_at <= now()
     ORDER BY id
     LIMIT $1)
   LIMIT $1`;

/** A run still running or due, or a schedule due (`state` says which: the run's status, or `schedule due`). */
export interface UnsettledWork {
  id: string;
  workflow: string;
  state: string;
}

/**
 * What the engine still has to hand on at the test clock's now: runs running, or due and not taken yet, and
 * schedules whose fire time came and that have not fired. The test kit moves the clock only when there is none, so
 * what came due at one time is done before the next comes. A read.
 */
export function unsettledWork(db: SqlExecutor, limit: number): Promise<UnsettledWork[]> {
  return db.query<UnsettledWork>(UNSETTLED_WORK, [limit]);
}

const ANNOUNCE_DUE_RUNS = `SELECT count(pg_notify('wf_runs_due', (extract(epoch FROM due_at) * 1000)::text || ' ' || id || ' ' || queue))::int AS announced
    FROM runs
   WHERE status IN ('queued', 'waiting') AND due_at <= now() AND due_at <> 'infinity'`;

/**
 * Sends the wf_runs_due notification (as the runs_notify_due trigger words it) for every run due by the test clock
 * and not taken: after the clock jumped past their due times, the coordinators' due timers hand them to waiting
 * claims at once, as when the time comes by itself. Changes nothing; a run taken meanwhile makes a claim look in
 * vain, as a late notification does. Returns how many it announced.
 */
export async function announceDueRuns(db: SqlExecutor): Promise<number> {
  const [row] = await db.query<{ announced: number }>(ANNOUNCE_DUE_RUNS);
  return row.announced;
}
