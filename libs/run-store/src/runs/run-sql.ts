import { RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';

/**
 * SQL fragments shared by the statements that change a run's state, so each rule is written once.
 * They are CTE bodies or expressions meant to be embedded in one atomic statement.
 */

/** Columns of `runs` under RunEntity's property names, for statements that return whole runs. */
export const RUN_COLUMNS = `id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
  idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt", claimed_by AS "claimedBy",
  heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt", started_at AS "startedAt",
  finished_at AS "finishedAt"`;

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

/**
 * The body of a MATERIALIZED CTE that locks, in id order, the runs of `source` (rows with run_id and
 * revision; repeats allowed) still running at that revision, and yields their id and revision. Each
 * run is looked up by its id in a LATERAL subquery (never flattened: it holds a row lock), so the plan
 * probes the primary key per run (or, in a table planned while a few pages, reads those pages), never the
 * running runs' index, whatever the statistics say of it: joined to the input instead, the generic
 * plan of a database planned small or never analyzed scanned every entry of `runs_idle_claims_idx`
 * (`status = 'running'`, dead entries included until a vacuum), 0.22 ms at a few thousand (EXPLAIN in
 * docs/benchmarks.md). The nested loop takes the locks in its sorted outer order: id order, as every
 * statement that locks several runs does, so two of them cannot deadlock.
 */
export function lockRunning(source: string): string {
  return `SELECT r.id, r.revision
            FROM (SELECT DISTINCT run_id, revision FROM ${source} ORDER BY run_id, revision) i
            CROSS JOIN LATERAL (SELECT id, revision FROM runs
                                 WHERE id = i.run_id AND revision = i.revision AND status = 'running'
                                   FOR UPDATE) r`;
}

/**
 * True when this session's coordinator publishes to a transport (its `wf.dispatch` setting, see
 * PersistenceModule): outbox rows are written only then, as the enqueue trigger does.
 */
export const DISPATCHING = `coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')`;

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
 * parent becomes due now. `ended` must have id, parent_id, status, output, error. Parents listed in
 * `except` (a CTE with `id`) are left alone: the same statement changes them otherwise (a claim that
 * takes a parent whose child wait timed out resolves that step itself), and one statement must not
 * update a row twice.
 */
export function wakeParents(ended: string, except?: string): string {
  return `parent_steps AS (
         UPDATE tasks t
            SET status = 'completed',
                output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                            'output', e.output, 'error', e.error)
           FROM ${ended} e
          WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
            AND t.kind = 'child' AND t.status = 'waiting'${
              except
                ? `
            AND e.parent_id NOT IN (SELECT id FROM ${except})`
                : ''
            }
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
 * node-postgres sends a JS array as a PostgreSQL array and a string as text; jsonb parameters
 * are therefore always passed pre-serialised.
 */
export function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
