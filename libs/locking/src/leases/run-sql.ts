import { RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';

/**
 * SQL fragments shared by the statements that change a run's state, so each rule is written once.
 * They are CTE bodies or expressions meant to be embedded in one atomic statement.
 */

/** Columns returned for a stored step (see StoredTask). */
export const STEP_COLUMNS = `key, kind, seq, status, attempts, output, error`;

/**
 * Appends one history row per row of `source` (a CTE with id, revision and the given columns).
 * Used by every transition so the history cannot miss one.
 */
export function appendHistory(source: string, from: string, to: string, worker = 'NULL'): string {
  return `INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
          SELECT id, ${from}, ${to}, revision, ${worker} FROM ${source}`;
}

/** NOTIFY for each row of `source` (a CTE with `queue`): wakes claimers of those queues at commit. */
export function notifyReady(source: string): string {
  return `(SELECT count(*) FROM (SELECT pg_notify('${RUNS_READY_CHANNEL}', queue) FROM ${source}) n)`;
}

/** NOTIFY for each row of `source` (a CTE with `id`): wakes result long-polls at commit. */
export function notifyFinished(source: string): string {
  return `(SELECT count(*) FROM (SELECT pg_notify('${RUN_FINISHED_CHANNEL}', id::text) FROM ${source}) n)`;
}

/**
 * Two CTEs (`parent_steps`, `woken_parents`) that hand the outcome of ended child runs to parents
 * waiting on them: the parent's child step resolves with the child's status and output, and the
 * parent becomes due now. `ended` must have id, parent_id, status, output, error.
 */
export function wakeParents(ended: string): string {
  return `parent_steps AS (
         UPDATE tasks t
            SET status = 'completed',
                output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                            'output', e.output, 'error', e.error)
           FROM ${ended} e
          WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
            AND t.kind = 'child' AND t.status = 'waiting'
         RETURNING t.run_id
       ), woken_parents AS (
         UPDATE runs p SET due_at = now(), updated_at = now()
           FROM parent_steps s
          WHERE p.id = s.run_id AND p.status = 'waiting'
         RETURNING p.id, p.queue
       )`;
}

/** Condition on the steps (table alias `alias`) a failed attempt leaves behind that must run again on the next attempt. */
export function stepsToRerun(alias: string): string {
  return `(${alias}.status = 'failed' OR ${alias}.kind = 'retry')`;
}

/**
 * Inserts a queued run ($1 id, $2 workflow, $3 version, $4 queue, $5 input, $6 priority,
 * $7 idempotency key, $8 runAt or null, $9 parent id or null) as the CTE `inserted`, and its first
 * history row. An existing idempotency key for the workflow inserts nothing.
 */
export const INSERT_RUN = `inserted AS (
         INSERT INTO runs (id, workflow, version, queue, status, input, priority, idempotency_key, due_at, parent_id)
         VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, coalesce($8, now()), $9)
         ON CONFLICT (workflow, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING *
       ), inserted_history AS (
         ${appendHistory('inserted', 'NULL', `'queued'`)}
       )`;

/**
 * node-postgres sends a JS array as a PostgreSQL array and a string as text; jsonb parameters
 * are therefore always passed pre-serialised.
 */
export function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
