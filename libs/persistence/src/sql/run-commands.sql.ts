import type { JsonValue, RunStatus } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';
import { matchesEvent, STEPS_RUN_AGAIN } from './steps.sql';

/*
 * State changes clients and operators ask for on an existing run (cancel, events, wake-ups, retries), and the
 * dispatcher's failing of a run its wake-up kept being delivered for. Each acts on the run's latest state under
 * its row lock, and bumps the revision where it takes a run away from its worker (cancel, a stalled failure),
 * which fences that worker off: its next write at the old revision matches nothing. NOTIFYs are delivered at
 * commit, so woken claimers and result long-polls see the final rows.
 */

const LOCK_RUN_STATUS = `SELECT status FROM runs WHERE id = $1 FOR UPDATE`;

/**
 * Locks a run, in a statement of its own at the start of a command's transaction, and returns its status
 * (undefined: no such run). The later statements of the transaction each take a fresh snapshot, so they see
 * whatever committed before the lock was granted: a child start the run was waiting for, a suspension.
 */
export async function lockRunStatus(db: SqlExecutor, id: string): Promise<RunStatus | undefined> {
  const [run] = await db.query<{ status: RunStatus }>(LOCK_RUN_STATUS, [id]);
  return run?.status;
}

/**
 * One pass of a cancel: cancels run $1 and its unfinished descendants (child runs, recursively) at revision + 1,
 * with their transitions, wakes a parent waiting on $1 with the child's `cancelled` outcome (its child step
 * resolves, and it becomes due now), and announces the cancelled runs (wf_run_finished) and the woken parent
 * (wf_runs_ready). Descendants are locked in the statement (FOR UPDATE), the target before it (lockRunStatus).
 */
const CANCEL_RUN_TREE = `WITH RECURSIVE tree AS (
    SELECT id FROM runs WHERE id = $1
    UNION
    SELECT r.id FROM runs r JOIN tree t ON r.parent_id = t.id
  ), locked AS (
    SELECT r.id, r.status FROM runs r JOIN tree USING (id)
     WHERE r.status IN ('queued', 'running', 'waiting')
     FOR UPDATE OF r
  ), cancelled AS (
    UPDATE runs r
       SET status = 'cancelled', revision = r.revision + 1, heartbeat_at = NULL,
           finished_at = now(), updated_at = now()
      FROM locked l
     WHERE r.id = l.id
    RETURNING r.id, r.revision, r.parent_id, r.status, r.output, r.error, l.status AS from_status
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, from_status, 'cancelled', revision, NULL FROM cancelled
  ), top AS (
    SELECT * FROM cancelled WHERE id = $1
  ), parent_steps AS (
    UPDATE tasks t
       SET status = 'completed',
           output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                       'output', e.output, 'error', e.error)
      FROM top e
     WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
       AND t.kind = 'child' AND t.status = 'waiting'
    RETURNING t.run_id
  ), woken_parents AS (
    -- A parent still running holds its row lock while it suspends at this very wait (re-sent after updates, or a
    -- wait group's): its row is waited for and re-read once it commits, so it is woken if it suspended. Matching
    -- only 'waiting' would skip it on this statement's snapshot, and the parent would sleep on with its wait done.
    UPDATE runs p SET due_at = CASE WHEN p.status = 'waiting' THEN now() ELSE p.due_at END, updated_at = now()
      FROM parent_steps s
     WHERE p.id = s.run_id AND p.status IN ('running', 'waiting')
    RETURNING p.id, p.queue, p.status
  )
  SELECT count(*)::int AS cancelled, (SELECT count(*) FROM (SELECT pg_notify('wf_run_finished', id::text) FROM cancelled) n),
         (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken_parents WHERE status = 'waiting') n) FROM cancelled`;

/** Runs one pass of a cancel of run `id` and its tree (see above); returns how many runs it cancelled. */
export async function cancelRunTree(db: SqlExecutor, id: string): Promise<number> {
  const [{ cancelled }] = await db.query<{ cancelled: number }>(CANCEL_RUN_TREE, [id]);
  return cancelled;
}

/**
 * Delivers an event to run $1's wait for an event named $2 whose `match` the data ($3) has (or that has none), if it
 * has one: that step resolves with the data and the run becomes due now (announced on wf_runs_ready). With several
 * such waits (branches of a wait group), the first in call order takes it. Run under the run's row lock
 * (lockRunStatus), so a wait being recorded concurrently either committed before (and is resolved here) or comes
 * after and finds the stored event (StepRepository.suspend consumes it).
 */
const DELIVER_EVENT = `WITH step AS (
    UPDATE tasks SET status = 'completed', output = jsonb_build_object('timedOut', false, 'data', $3::jsonb)
     WHERE run_id = $1 AND key = (
             SELECT w.key FROM tasks w
              WHERE w.run_id = $1 AND w.kind = 'event' AND w.status = 'waiting' AND w.name = $2
                AND ${matchesEvent('$3::jsonb', "w.output -> 'match'")}
              ORDER BY w.seq, length(w.key), w.key LIMIT 1)
    RETURNING key
  ), woken AS (
    UPDATE runs SET due_at = now(), updated_at = now()
     WHERE id = $1 AND status = 'waiting' COLLATE "C" AND EXISTS (SELECT 1 FROM step)
    RETURNING queue
  )
  SELECT key, (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken) n) FROM step`;

/** Delivers event `name` to the run's waiting step (see above); returns that step's key, or undefined when none waits for it. */
export async function deliverEvent(db: SqlExecutor, id: string, name: string, data: JsonValue): Promise<string | undefined> {
  const [delivered] = await db.query<{ key: string }>(DELIVER_EVENT, [id, name, jsonParam(data) ?? 'null']);
  return delivered?.key;
}

/**
 * How many events run $1 keeps that no wait consumed, counted up to $2 (the bound: no need to count further). Read
 * under the run's row lock (lockRunStatus), which every statement that stores or consumes its events holds, so the
 * count stays true until commit. The partial index of pending events holds exactly these rows.
 */
const COUNT_PENDING_EVENTS = `SELECT count(*)::int AS n FROM (SELECT 1 FROM run_events WHERE run_id = $1 AND consumed_by IS NULL LIMIT $2) k`;

/** The run's events kept for a later wait (see above), up to `limit`. */
export async function countPendingEvents(db: SqlExecutor, id: string, limit: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(COUNT_PENDING_EVENTS, [id, limit]);
  return row.n;
}

const STORE_EVENT = `INSERT INTO run_events (run_id, name, data, consumed_by) VALUES ($1, $2, $3, $4)`;

/** Keeps an event sent to a run: consumed by the step it was delivered to (`consumedBy`), or kept for a later wait (null). */
export async function storeEvent(db: SqlExecutor, id: string, name: string, data: JsonValue, consumedBy: string | null): Promise<void> {
  await db.query(STORE_EVENT, [id, name, jsonParam(data), consumedBy]);
}

/** Ends a durable sleep early: run $1, if it waits on a sleep step, becomes due now (announced on wf_runs_ready). */
const WAKE_SLEEPING_RUN = `WITH woken AS (
    UPDATE runs r SET due_at = now(), updated_at = now()
     WHERE r.id = $1 AND r.status = 'waiting' COLLATE "C"
       AND EXISTS (SELECT 1 FROM tasks s WHERE s.run_id = r.id AND s.kind = 'sleep' AND s.status = 'waiting')
    RETURNING r.id, r.queue
  ), ended AS (
    -- The claim resolves a wait whose time came: the sleep's time is now.
    UPDATE tasks s SET wake_at = now() FROM woken w WHERE s.run_id = w.id AND s.kind = 'sleep' AND s.status = 'waiting'
  )
  SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken) n) FROM woken`;

/** Wakes a sleeping run (see above), under its row lock (lockRunStatus); whether it slept. */
export async function wakeSleepingRun(db: SqlExecutor, id: string): Promise<boolean> {
  return (await db.query(WAKE_SLEEPING_RUN, [id])).length > 0;
}

/**
 * Runs failed run $1 again as attempt + 1, queued at revision + 1, due now, with its stall count reset; completed
 * steps are kept, so it resumes from its checkpoints; failed steps and retry waits are removed to run again (not a
 * failed update: it is the answer its caller got, replayed as it was). The
 * run is locked in the statement (`target`, FOR UPDATE) before its status is judged, so a concurrent retry waits
 * and then finds it queued (not applied).
 */
const RETRY_FAILED_RUN = `WITH target AS (
    SELECT id, status FROM runs WHERE id = $1 FOR UPDATE
  ), retried AS (
    UPDATE runs r
       SET status = 'queued', attempt = r.attempt + 1, revision = r.revision + 1, due_at = now(), stalls = 0,
           finished_at = NULL, updated_at = now()
      FROM target t
     WHERE r.id = t.id AND t.status = 'failed'
    RETURNING r.id, r.revision, r.queue
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'failed', 'queued', revision, NULL FROM retried
  ), cleared AS (
    DELETE FROM tasks t USING retried r WHERE t.run_id = r.id AND ${STEPS_RUN_AGAIN}
  ), refused_updates AS (
    -- Updates pending when the run failed were refused then (updates.sql.ts): the new attempt does not apply them.
    UPDATE run_updates u SET status = 'refused', answered_at = now() FROM retried r WHERE u.run_id = r.id AND u.status = 'pending'
    RETURNING u.id
  )
  SELECT t.status AS previous, EXISTS (SELECT 1 FROM retried) AS applied,
         (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM retried) n),
         (SELECT count(*) FROM (SELECT pg_notify('wf_update_answered', id::text) FROM refused_updates) m) FROM target t`;

/** Retries a failed run (see above): its status before, and whether it applied; undefined when there is no such run. */
export async function retryFailedRun(db: SqlExecutor, id: string): Promise<{ previous: RunStatus; applied: boolean } | undefined> {
  const [row] = await db.query<{ previous: RunStatus; applied: boolean }>(RETRY_FAILED_RUN, [id]);
  return row && { previous: row.previous, applied: row.applied };
}

/**
 * Fails as `stalled` (RunStalledError, message $4) the run last taken with wake-up $2 of queue $1 (see
 * runs.claimed_via: the running run with that wake-up whose claim was refreshed last) if that claim went idle
 * (no heartbeat for $3 ms: its worker is gone), at revision + 1, with its transition, its waiting parent woken
 * and both announced. A run a live worker holds is left alone: the UPDATE re-checks the heartbeat under the row
 * lock, so a heartbeat committed meanwhile keeps the run. Found among the queue's running runs
 * (runs_idle_claims_idx).
 */
const FAIL_STALLED_TAKEN_WITH = `WITH last_taken AS (
    SELECT id FROM runs WHERE queue = $1 AND claimed_via = $2 AND status = 'running'
     ORDER BY heartbeat_at DESC LIMIT 1
  ), failed AS (
    UPDATE runs
       SET status = 'failed', error = jsonb_build_object('name', 'RunStalledError', 'reason', 'stalled', 'message', $4::text), revision = revision + 1,
           heartbeat_at = NULL, finished_at = now(), updated_at = now()
     WHERE id = (SELECT id FROM last_taken) AND status = 'running' COLLATE "C" AND heartbeat_at < now() - $3 * interval '1 millisecond'
    RETURNING id, revision, claimed_by, parent_id, status, output, error
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', 'failed', revision, claimed_by FROM failed
  ), parent_steps AS (
    UPDATE tasks t
       SET status = 'completed',
           output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                       'output', e.output, 'error', e.error)
      FROM failed e
     WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
       AND t.kind = 'child' AND t.status = 'waiting'
    RETURNING t.run_id
  ), woken_parents AS (
    -- A parent still running holds its row lock while it suspends at this very wait (re-sent after updates, or a
    -- wait group's): its row is waited for and re-read once it commits, so it is woken if it suspended. Matching
    -- only 'waiting' would skip it on this statement's snapshot, and the parent would sleep on with its wait done.
    UPDATE runs p SET due_at = CASE WHEN p.status = 'waiting' THEN now() ELSE p.due_at END, updated_at = now()
      FROM parent_steps s
     WHERE p.id = s.run_id AND p.status IN ('running', 'waiting')
    RETURNING p.id, p.queue, p.status
  )
  SELECT (SELECT id FROM last_taken) AS id, EXISTS (SELECT 1 FROM failed) AS failed,
         (SELECT count(*) FROM (SELECT pg_notify('wf_run_finished', id::text) FROM failed) n),
         (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken_parents WHERE status = 'waiting') n)`;

/** Fails the run last taken with a wake-up if its claim went idle (see above): that run's id (null: none running), and whether it was failed. */
export async function failStalledTakenWith(
  db: SqlExecutor,
  params: { queue: string; wakeup: string; claimMinIdleTimeMs: number; message: string },
): Promise<{ id: string | null; failed: boolean }> {
  const [row] = await db.query<{ id: string | null; failed: boolean }>(FAIL_STALLED_TAKEN_WITH, [
    params.queue,
    params.wakeup,
    params.claimMinIdleTimeMs,
    params.message,
  ]);
  return { id: row.id, failed: row.failed };
}
