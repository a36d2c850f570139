import type { JsonValue, StepKind, StoredTask } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';

/*
 * Wait groups (`ctx.any`, `ctx.all`; GroupRepository): a group's branches are steps of their own kinds keyed
 * `<group key>/<index>` at the group's position, and its outcome a `group` step. Every statement here runs in the
 * group's transaction after lockRunningRun locked the run at the worker's revision. An event's delivery and a
 * token's completion lock the run too, so they come before or after the whole of it. A child's end resolves a waiting branch step whatever its
 * parent does (the claims leave branch steps waiting), and wakes the parent under its row lock: after the group's
 * commit, which it then sees (a suspension it wakes, or a decision that set the step lost, which it re-checks).
 */

/** A branch step as the group reads it: whether it finished for real, and when (epoch ms). */
export interface BranchRow extends StoredTask {
  /** When it finished: the event's sending, the child's end, the sleep's wake time, the task's record; null if it has not. */
  settledAt: number | null;
  /** How long until a sleep's wake time (ms, by the database's clock, as every time here). */
  wakeInMs: number | null;
  childId: string | null;
}

/**
 * The branch steps of group $2 (its key and `/`) of run $1, through the primary key's run prefix, with when each
 * finished: an event branch when its event was sent, a child when it ended, a sleep at its wake time (whether or not
 * a statement resolved its step yet), a task when its outcome was recorded, a completion token's wait when the token
 * was completed (its row points at the branch while the group waits: moveTokenWait) or at its expiry (`wake_at`).
 */
const FIND_BRANCHES = `SELECT t.key, t.kind, t.seq, t.status, t.attempts, t.output, t.error, t.child_id AS "childId",
       ceil(extract(epoch FROM t.wake_at - now()) * 1000)::float8 AS "wakeInMs",
       (extract(epoch FROM CASE
          WHEN t.kind IN ('event', 'child', 'external') AND t.output ? 'lost' THEN NULL
          WHEN t.kind = 'external' AND t.status = 'waiting' THEN CASE WHEN t.wake_at <= now() THEN t.wake_at END
          WHEN t.kind = 'external' THEN coalesce((SELECT c.completed_at FROM completion_tokens c WHERE c.run_id = t.run_id AND c.wait_key = t.key), t.wake_at)
          WHEN t.kind IN ('event', 'child') AND t.status = 'waiting' THEN NULL
          WHEN t.kind = 'event' THEN (SELECT min(e.created_at) FROM run_events e WHERE e.run_id = t.run_id AND e.consumed_by = t.key)
          WHEN t.kind = 'child' THEN (SELECT c.finished_at FROM runs c WHERE c.id = t.child_id)
          WHEN t.kind = 'sleep' THEN CASE WHEN t.wake_at <= now() THEN t.wake_at END
          ELSE t.created_at END) * 1000)::float8 AS "settledAt"
  FROM tasks t
 WHERE t.run_id = $1 AND starts_with(t.key, $2 || '/')`;

/** The group's branch steps recorded so far (see above). */
export async function findGroupBranches(db: SqlExecutor, runId: string, groupKey: string): Promise<BranchRow[]> {
  return db.query<BranchRow>(FIND_BRANCHES, [runId, groupKey]);
}

/**
 * A branch step: waiting (an event wait with its match in the output, a sleep until $10 ms from now, a child run
 * $11, a completion token until its expiry $10 ms from now), or finished at once (an event kept earlier, a zero
 * sleep, a task's outcome, a token completed or expired). The key is new: the caller found none.
 */
const INSERT_BRANCH = `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error, wake_at, child_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + $10 * interval '1 millisecond', $11)
RETURNING key, kind, seq, status, attempts, output, error`;

/** Records a branch step (see above). */
export async function insertBranch(
  db: SqlExecutor,
  step: {
    runId: string;
    key: string;
    kind: StepKind;
    seq: number;
    name: string;
    status: StoredTask['status'];
    attempts?: number;
    output: JsonValue;
    error?: JsonValue;
    delayMs?: number | null;
    childId?: string | null;
  },
): Promise<StoredTask> {
  const [task] = await db.query<StoredTask>(INSERT_BRANCH, [
    step.runId,
    step.key,
    step.kind,
    step.seq,
    step.name,
    step.status,
    step.attempts ?? 1,
    jsonParam(step.output),
    jsonParam(step.error),
    step.delayMs ?? null,
    step.childId ?? null,
  ]);
  return task;
}

/**
 * Sets a branch step's status and output once its group is decided: completed (a sleep past its wake time, a token's
 * wait past its expiry), or lost (`{"lost": true}`) when another branch won its `any`.
 */
const SET_BRANCH = `UPDATE tasks SET status = $3, output = $4 WHERE run_id = $1 AND key = $2`;

/** Sets a branch step (see above). */
export async function setBranch(db: SqlExecutor, runId: string, key: string, status: StoredTask['status'], output: JsonValue): Promise<void> {
  await db.query(SET_BRANCH, [runId, key, status, jsonParam(output)]);
}

/**
 * Gives back the events that branches of group $2 other than the winner $3 consumed: they are kept again, for a
 * later wait, as if the losing branches had never waited.
 */
const RELEASE_EVENTS = `UPDATE run_events SET consumed_by = NULL
 WHERE run_id = $1 AND starts_with(consumed_by, $2 || '/') AND consumed_by <> $3`;

/** Releases the losers' events (see above). */
export async function releaseLosersEvents(db: SqlExecutor, runId: string, groupKey: string, winnerKey: string): Promise<void> {
  await db.query(RELEASE_EVENTS, [runId, groupKey, winnerKey]);
}

/**
 * A suspension of a group sent again after its answer was lost: the run waits at revision $2 + 1 on a branch of
 * group $3, which only the holder of that claim can have made so (see findLandedSuspension).
 */
const FIND_WAITING_BRANCH = `SELECT key, kind, seq, status, attempts, output, error FROM tasks
 WHERE run_id = $1 AND starts_with(key, $3 || '/') AND status = 'waiting'
   AND EXISTS (SELECT FROM runs r WHERE r.id = $1 AND r.revision = $2 + 1 AND r.status = 'waiting' COLLATE "C")
 LIMIT 1`;

/** A waiting branch the group's first suspension left (see above), or undefined. */
export async function findLandedGroupSuspension(db: SqlExecutor, runId: string, expectedRevision: number, groupKey: string): Promise<StoredTask | undefined> {
  const [task] = await db.query<StoredTask>(FIND_WAITING_BRANCH, [runId, expectedRevision, groupKey]);
  return task;
}
