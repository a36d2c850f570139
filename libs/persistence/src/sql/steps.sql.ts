import { ATTEMPT_TIMES_MAX, type AttemptTime, type EventMatch, type JsonValue, type StepKind, type StoredTask } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';

/*
 * Steps where a run suspends (sleeps, event waits, retry waits) and child starts (StepRepository). Each runs in
 * one transaction that first locks the run if it is still running at the revision its worker holds
 * (lockRunningRun): the statements after it act under that row lock, so a concurrent write to the run (an event
 * sent, a cancel, a takeover) waits for the transaction or came before it, and a worker that lost its claim
 * changes nothing.
 */

const LOCK_RUNNING_RUN = `SELECT shard, tags, traceparent, tracestate FROM runs WHERE id = $1 AND revision = $2 AND status = 'running' COLLATE "C" FOR UPDATE`;

/** What a child started under the locked run inherits from it: its routing shard, tags and trace context. */
export interface LockedRun {
  shard: string | null;
  tags: Record<string, string>;
  traceparent: string | null;
  tracestate: string | null;
}

/** Locks the run if it is running at the expected revision, and returns what a child inherits; undefined otherwise (fencing.sql.ts tells 409 from 404). */
export async function lockRunningRun(db: SqlExecutor, runId: string, expectedRevision: number): Promise<LockedRun | undefined> {
  const [run] = await db.query<LockedRun>(LOCK_RUNNING_RUN, [runId, expectedRevision]);
  return run;
}

/**
 * Whether event data (the SQL expression `data`) has every field value of a `match` (the jsonb expression `match`,
 * SQL NULL: no match given): each key is a dotted path into the data, and the value there must equal the match's
 * value as JSON (jsonb equality: objects and arrays whole, numbers by value). A path the data lacks is SQL NULL,
 * distinct from every value, `null` included. Shared by the statements that pair a wait with an event.
 */
export function matchesEvent(data: string, match: string): string {
  return `NOT EXISTS (SELECT FROM jsonb_each(coalesce(${match}, '{}'::jsonb)) m WHERE ${data} #> string_to_array(m.key, '.') IS DISTINCT FROM m.value)`;
}

/**
 * Consumes the oldest event named $2 sent to run $1 before it waited, not consumed yet and matching $4 (null: any),
 * for step $3. Under the run's row lock, which an event's delivery takes too (run-commands.sql.ts), so an event
 * sent concurrently is either consumed here or delivered to the waiting step, never lost. The events of that name
 * it passes over are bounded by PENDING_EVENTS_PER_RUN_MAX (the pending index holds them by run and name). The
 * update names the run too, so that it reaches the event by run, as a key of (run_id, id) would need.
 */
const CONSUME_EVENT = `UPDATE run_events SET consumed_by = $3
 WHERE run_id = $1 AND id = (SELECT e.id FROM run_events e
              WHERE e.run_id = $1 AND e.name = $2 AND e.consumed_by IS NULL AND ${matchesEvent('e.data', '$4::jsonb')}
              ORDER BY e.id LIMIT 1)
RETURNING data, (extract(epoch FROM created_at) * 1000)::float8 AS "sentAt"`;

/** Consumes a stored event for a wait (see above): its data and when it was sent (epoch ms), or undefined when none was sent. */
export async function consumeEvent(
  db: SqlExecutor,
  runId: string,
  name: string,
  key: string,
  match: EventMatch | undefined,
): Promise<{ data: JsonValue; sentAt: number } | undefined> {
  const [event] = await db.query<{ data: JsonValue; sentAt: number }>(CONSUME_EVENT, [runId, name, key, jsonParam(match)]);
  return event;
}

/** A suspension step that resolves at once (a zero sleep, a stored event), recorded completed. The key is new: the caller found none. */
const INSERT_RESOLVED_STEP = `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output)
VALUES ($1, $2, $3, $4, $5, 'completed', 1, $6)
RETURNING key, kind, seq, status, attempts, output, error`;

/** Records a step resolved at once (see above). */
export async function insertResolvedStep(
  db: SqlExecutor,
  step: { runId: string; key: string; kind: StepKind; seq: number; name: string; output: JsonValue },
): Promise<StoredTask> {
  const [task] = await db.query<StoredTask>(INSERT_RESOLVED_STEP, [step.runId, step.key, step.kind, step.seq, step.name, jsonParam(step.output)]);
  return task;
}

/**
 * The steps a retried run (its next attempt) runs again, as a condition on `tasks` aliased `t`: failed ones and retry
 * waits. Not a failed update (applied at a wait, it is replayed there: removing it would renumber the next one), and
 * with a failed task branch its wait group's recorded decision too (the group is decided again once that branch
 * ran again; kept, the decision would name a branch the history no longer holds). Shared by both retries.
 */
export const STEPS_RUN_AGAIN = `((t.status = 'failed' AND t.kind <> 'update') OR t.kind = 'retry'
    OR (t.kind = 'group' AND EXISTS (SELECT 1 FROM tasks b WHERE b.run_id = t.run_id AND starts_with(b.key, t.key || '/') AND b.status = 'failed')))`;

/**
 * A waiting step (sleep, event wait, retry wait), waking after $8 ms (null: never by itself). A retry wait is the
 * one step re-armed (ON CONFLICT: the same key), each time its task fails again with a long backoff. A retry wait
 * keeps the attempts of the executions that ended in it ($9: `[{attempt, offsetMs, durationMs}]`, offsets from the
 * start of an execution that began $10 ms ago), dated here on the database's clock as a task's start is
 * (`[{attempt, startedAt, durationMs}]`), each re-arm appending its own, the last ATTEMPT_TIMES_MAX ($11) kept.
 * An event wait's output while it waits holds its `match` (which an event's delivery reads). Under the run's lock (the caller's lockRunning), so two re-arms of one step do not interleave.
 */
const UPSERT_WAITING_STEP = `WITH dated AS (
    SELECT jsonb_agg(jsonb_build_object('attempt', a->'attempt', 'durationMs', a->'durationMs',
                                        'startedAt', now() + ((a->>'offsetMs')::bigint - $10) * interval '1 millisecond') ORDER BY n) AS times
      FROM jsonb_array_elements($9::jsonb) WITH ORDINALITY AS e(a, n)
  )
  INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, wake_at, attempt_times)
  VALUES ($1, $2, $3, $4, $5, 'waiting', $6, $7, now() + $8 * interval '1 millisecond', (SELECT times FROM dated))
  ON CONFLICT (run_id, key) DO UPDATE
    SET status = 'waiting', attempts = excluded.attempts, output = excluded.output, wake_at = excluded.wake_at,
        attempt_times = (SELECT jsonb_agg(t ORDER BY n) FROM (
                           SELECT t, n FROM jsonb_array_elements(coalesce(tasks.attempt_times, '[]') || coalesce(excluded.attempt_times, '[]'))
                                              WITH ORDINALITY AS k(t, n)
                            ORDER BY n DESC LIMIT $11) kept)
  RETURNING key, kind, seq, status, attempts, output, error`;

/** Records (or re-arms) a waiting step (see above). */
export async function upsertWaitingStep(
  db: SqlExecutor,
  step: {
    runId: string;
    key: string;
    kind: StepKind;
    seq: number;
    name: string;
    attempts: number;
    delayMs: number | null;
    match?: EventMatch;
    /** A retry wait: the attempts of the execution ending in it, numbered, and how long ago it began. */
    executed?: { durationMs: number; attemptTimes: (AttemptTime & { attempt: number })[] };
  },
): Promise<StoredTask> {
  const [task] = await db.query<StoredTask>(UPSERT_WAITING_STEP, [
    step.runId,
    step.key,
    step.kind,
    step.seq,
    step.name,
    step.attempts,
    jsonParam(step.match ? { attempts: step.attempts, match: step.match } : { attempts: step.attempts }),
    step.delayMs,
    JSON.stringify(step.executed?.attemptTimes ?? []),
    step.executed?.durationMs ?? 0,
    ATTEMPT_TIMES_MAX,
  ]);
  return task;
}

/**
 * A child step: waiting for child $7 (until $8 ms from now: its timeout), or completed at once with the child's id
 * when the parent does not wait. The step row makes a child start idempotent per key: a re-executed parent finds
 * it and gets the child it already started.
 */
const INSERT_CHILD_STEP = `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, child_id, wake_at)
VALUES ($1, $2, 'child', $3, $4, $5, 1, $6, $7, now() + $8 * interval '1 millisecond')
RETURNING key, kind, seq, status, attempts, output, error`;

/** Records a child step (see above). */
export async function insertChildStep(
  db: SqlExecutor,
  step: { runId: string; key: string; seq: number; name: string; wait: boolean; childId: string; timeoutMs: number | null },
): Promise<StoredTask> {
  const [task] = await db.query<StoredTask>(INSERT_CHILD_STEP, [
    step.runId,
    step.key,
    step.seq,
    step.name,
    step.wait ? 'waiting' : 'completed',
    step.wait ? null : jsonParam({ childId: step.childId }),
    step.childId,
    step.timeoutMs,
  ]);
  return task;
}

/**
 * running -> waiting at revision + 1 (which fences the worker's claim off), due after $2 ms (null: until
 * something wakes it), or, with a step key $3, when that waiting step is due (its `wake_at`), with its transition;
 * announced now only if it is due now. The caller holds the row lock (lockRunningRun). At a wait ($4: a sleep, an
 * event, a child or a completion wait, a wait group) it does not suspend while the run has updates pending: they are
 * applied at that wait first (updates.sql.ts; a send takes the same row lock, so none appears meanwhile). The probe is
 * part of the statement, so a suspension without updates costs no round trip more than before them.
 */
const SUSPEND_RUN = `WITH suspended AS (
    UPDATE runs
       SET status = 'waiting', revision = revision + 1, heartbeat_at = NULL, updated_at = now(),
           due_at = CASE WHEN $3::text IS NULL THEN coalesce(now() + $2 * interval '1 millisecond', 'infinity')
                         ELSE coalesce((SELECT wake_at FROM tasks WHERE run_id = $1 AND key = $3), 'infinity') END
     WHERE id = $1 AND status = 'running' COLLATE "C"
       AND (NOT $4::boolean OR NOT EXISTS (SELECT 1 FROM run_updates u WHERE u.run_id = $1 AND u.status = 'pending'))
    RETURNING id, revision, claimed_by, queue, due_at
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', 'waiting', revision, claimed_by FROM suspended
  )
  SELECT CASE WHEN due_at <= now() THEN (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM suspended) n) END FROM suspended`;

/**
 * Suspends a running run (see above): for `delayMs`, or (`atStep`) until that waiting step is due; at a wait
 * (`atWait`: by default, with a step) unless updates are pending. Whether it suspended.
 */
export async function suspendRun(
  db: SqlExecutor,
  runId: string,
  delayMs: number | null,
  atStep: string | null = null,
  atWait = atStep !== null,
): Promise<boolean> {
  return (await db.query(SUSPEND_RUN, [runId, delayMs, atStep, atWait])).length > 0;
}
