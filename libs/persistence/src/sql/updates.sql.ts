import type { ErrorDetails, JsonValue, PendingUpdate, RegisteredWorkflow, UpdateStatus } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';

/** An update a version declares, as registered: its name and input schema. */
export type DeclaredUpdateRow = NonNullable<RegisteredWorkflow['updates']>[number];

/*
 * Updates (docs/architecture.md, "Updates"): `run_updates` rows, pending until the run applies them where it waits.
 * Every write to a run's updates runs under the run's row lock (a client's send after lockRunStatus, a worker's
 * record after lockRunningRun, a suspension's probe inside its locked transaction), so an update sent while its run
 * suspends is either seen by the suspension (which then applies it instead of suspending) or wakes the suspended
 * run; and an update is answered once, by the worker holding the run at its revision.
 */

/** An update was answered (completed, failed or refused); payload: its id. */
export const UPDATE_ANSWERED_CHANNEL = 'wf_update_answered';

/**
 * Accepts update $1 to run $2 (name $3, input $4), pending, at the next position (arrival order: the caller holds
 * the run's row lock, so positions follow the order sends were accepted in). A run suspended at a sleep, an event,
 * a child or a completion-token wait (a wait group's branches are of these kinds) becomes due now (announced on
 * wf_runs_ready; the enqueue trigger writes its outbox row), so a worker takes it and applies the update at that wait; the wait itself keeps its own deadline (the claim resolves
 * only waits whose time came). A run waiting to retry a task is not woken: it applies the update at its next wait.
 */
const INSERT_UPDATE = `WITH inserted AS (
    INSERT INTO run_updates (id, run_id, name, input) VALUES ($1, $2, $3, $4) RETURNING id
  ), woken AS (
    UPDATE runs r SET due_at = now(), updated_at = now()
     WHERE r.id = $2 AND r.status = 'waiting' COLLATE "C" AND r.due_at > now()
       AND EXISTS (SELECT 1 FROM tasks s WHERE s.run_id = r.id AND s.status = 'waiting' AND s.kind IN ('sleep', 'event', 'child', 'external'))
    RETURNING r.queue
  )
  SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken) n) AS woken FROM inserted`;

/** Accepts an update (see above), under the run's row lock (lockRunStatus). */
export async function insertUpdate(db: SqlExecutor, update: { id: string; runId: string; name: string; input: JsonValue }): Promise<void> {
  await db.query(INSERT_UPDATE, [update.id, update.runId, update.name, jsonParam(update.input) ?? 'null']);
}

/** An update as the client API shows it. */
export interface UpdateRow {
  id: string;
  runId: string;
  name: string;
  status: UpdateStatus;
  input: JsonValue;
  output: JsonValue;
  error: ErrorDetails | null;
  createdAt: Date;
  answeredAt: Date | null;
}

const FIND_UPDATE = `SELECT id, run_id AS "runId", name, status, input, output, error, created_at AS "createdAt", answered_at AS "answeredAt"
    FROM run_updates WHERE id = $1 AND run_id = $2`;

/** Update $1 of run $2 (a primary-key probe), or undefined. */
export async function findUpdate(db: SqlExecutor, runId: string, id: string): Promise<UpdateRow | undefined> {
  const [row] = await db.query<UpdateRow>(FIND_UPDATE, [id, runId]);
  return row;
}

/**
 * Refuses the updates of run $1 still pending once it has ended: no worker can apply them any more (a worker's
 * record needs the run running at its revision), so the refusal is final. Done when a caller finds the run ended
 * with its update pending (a finish does not pay for it on the hot path); a retry of a failed run refuses them in
 * its own statement first (retryFailedRun), so a later attempt never applies an update its caller was refused.
 * Two refusals at once: the second finds the rows no longer pending (their locks make it wait for the first).
 */
const REFUSE_PENDING_UPDATES = `WITH refused AS (
    UPDATE run_updates u SET status = 'refused', answered_at = now()
      FROM runs r
     WHERE u.run_id = $1 AND u.status = 'pending' AND r.id = u.run_id AND r.status COLLATE "C" IN ('completed', 'failed', 'cancelled')
    RETURNING u.id
  )
  SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_update_answered', id::text) FROM refused) n) AS refused`;

/** Refuses the pending updates of an ended run (see above). */
export async function refusePendingUpdates(db: SqlExecutor, runId: string): Promise<void> {
  await db.query(REFUSE_PENDING_UPDATES, [runId]);
}

const PENDING_UPDATES = `SELECT id, name, input FROM run_updates WHERE run_id = $1 AND status = 'pending' ORDER BY position LIMIT $2`;

/** The run's pending updates in arrival order (run_updates_pending_idx), for the suspension holding its row lock. */
export function findPendingUpdates(db: SqlExecutor, runId: string, limit: number): Promise<PendingUpdate[]> {
  return db.query<PendingUpdate>(PENDING_UPDATES, [runId, limit]);
}

/** An update a worker applied: its step key, and the handler's answer. */
export interface AppliedUpdate {
  id: string;
  key: string;
  status: 'completed' | 'failed';
  output: JsonValue;
  error: ErrorDetails | null;
}

/**
 * Records the updates a worker applied at the wait at position $2 of run $1: each answered (if still pending) and
 * its step in the run's history (kind `update`, its input beside its answer, so a replay applies it there again),
 * announced on wf_update_answered. The caller holds the run's row lock at the worker's revision (lockRunningRun),
 * so only the worker holding the run answers. A resend of a record that landed finds the updates answered and
 * changes nothing (the steps' keys are taken too).
 */
const RECORD_APPLIED_UPDATES = `WITH applied AS (
    UPDATE run_updates u SET status = a.status, output = a.output, error = a.error, answered_at = now()
      FROM unnest($3::uuid[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[]) AS a(id, key, status, output, error)
     WHERE u.id = a.id AND u.run_id = $1 AND u.status = 'pending'
    RETURNING u.id, u.name, u.input, a.key, a.status, a.output, a.error
  ), steps AS (
    INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error, started_at)
    SELECT $1, key, 'update', $2, name, status, 1, jsonb_build_object('updateId', id, 'input', input, 'output', output), error, now()
      FROM applied
    ON CONFLICT (run_id, key) DO NOTHING
  )
  SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_update_answered', id::text) FROM applied) n) AS answered`;

/** Records applied updates (see above). */
export async function recordAppliedUpdates(db: SqlExecutor, runId: string, seq: number, updates: AppliedUpdate[]): Promise<void> {
  await db.query(RECORD_APPLIED_UPDATES, [
    runId,
    seq,
    updates.map((u) => u.id),
    updates.map((u) => u.key),
    updates.map((u) => u.status),
    updates.map((u) => jsonParam(u.output)),
    updates.map((u) => jsonParam(u.error)),
  ]);
}

const RECORD_DECLARED_UPDATES = `UPDATE workflows w SET updates = d.updates
    FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS d(workflow, version, updates)
   WHERE w.workflow = d.workflow AND w.version = d.version AND w.updates IS DISTINCT FROM d.updates`;

/**
 * Records the updates workflow versions declare, as a worker registered them (in the registration's transaction,
 * after its versions were upserted), as recordDeclaredInputSchemas does the input schemas: only what changed, the
 * last registration wins, a version registered without any goes back to none.
 */
export async function recordDeclaredUpdates(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<void> {
  await tx.query(RECORD_DECLARED_UPDATES, [
    workflows.map((w) => w.name),
    workflows.map((w) => w.version),
    workflows.map((w) => jsonParam(w.updates && w.updates.length > 0 ? w.updates : null)),
  ]);
}

const FIND_DECLARED_UPDATES = `SELECT updates FROM workflows WHERE workflow = $1 AND version = $2`;

/** The updates a registered version declares (empty: none, or never registered). A primary-key probe. */
export async function findDeclaredUpdates(db: SqlExecutor, workflow: string, version: string): Promise<DeclaredUpdateRow[]> {
  const [row] = await db.query<{ updates: DeclaredUpdateRow[] | null }>(FIND_DECLARED_UPDATES, [workflow, version]);
  return row?.updates ?? [];
}
