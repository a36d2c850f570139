import type { RegisteredWorkflow } from '@nest-durable/common';
import type { SqlExecutor } from '../database';

/*
 * Retention's statements. Each delete deletes at most `limit` rows, oldest first, in a transaction of its own
 * (RetentionRepository.batch), so no lock is held for long. None waits for a row lock (SKIP LOCKED): a row
 * someone holds is left for the next round. Rows a claim or a take may pick (queued, waiting, running runs;
 * pending outbox rows) are never candidates, so retention and the hot path do not meet on a row.
 */

/**
 * How long what a workflow leaves behind is kept (ms; 0 keeps): the windows configured for particular
 * workflows (RUN_RETENTION_OVERRIDES), else the window a version declares in code (`workflows.retention_ms`,
 * registered by its workers), else the default (RUN_RETENTION_MS).
 */
export interface RetentionWindows {
  defaultMs: number;
  byWorkflow: Record<string, number>;
}

/** The windows as two parallel arrays ($2 names, $3 milliseconds) and the default ($1). */
function windowParams(windows: RetentionWindows): unknown[] {
  const entries = Object.entries(windows.byWorkflow);
  return [windows.defaultMs, entries.map(([name]) => name), entries.map(([, ms]) => ms)];
}

const RECORD_DECLARED_WINDOWS = `UPDATE workflows w SET retention_ms = d.ms
    FROM unnest($1::text[], $2::text[], $3::bigint[]) AS d(workflow, version, ms)
   WHERE w.workflow = d.workflow AND w.version = d.version AND w.retention_ms IS DISTINCT FROM d.ms`;

/**
 * Records the windows workflow versions declare in code, as a worker registered them (in the
 * registration's transaction, after its versions were upserted). Writes only what changed, so the
 * registrations every few seconds cost a primary-key probe per version. A version registered without
 * one goes back to the default. Two registrations of a version serialise on its row; the last one wins.
 */
export async function recordDeclaredWindows(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<void> {
  await tx.query(RECORD_DECLARED_WINDOWS, [workflows.map((w) => w.name), workflows.map((w) => w.version), workflows.map((w) => w.retentionMs ?? null)]);
}

const TUNE_RETENTION_BATCH = `SET LOCAL jit = off; SET LOCAL synchronous_commit = off`;

/**
 * For the rest of a batch's transaction: planned without JIT (the runs statement's estimates, a recursive scan
 * and per-version laterals, crossed jit_above_cost, and compiling it took 300 ms of a 3 ms statement on 100,000
 * runs) and committed without waiting for the WAL flush (a delete lost in a crash is done again next time).
 */
export async function tuneRetentionBatch(tx: SqlExecutor): Promise<void> {
  await tx.query(TUNE_RETENTION_BATCH);
}

/**
 * One batch of finished runs past their windows (see deleteFinishedRuns): $1 the default window, $2/$3
 * the workflows with configured windows and those windows (ms), $4 the most runs to delete. Exported for
 * bench/retention.ts, which prepares it to time it.
 */
export const DELETE_FINISHED_RUNS = `WITH RECURSIVE versions AS (
       (SELECT workflow, version FROM runs WHERE status IN ('completed', 'failed', 'cancelled') ORDER BY workflow, version LIMIT 1)
       UNION ALL
       SELECT next.workflow, next.version FROM versions v
        CROSS JOIN LATERAL (
              SELECT workflow, version FROM runs
               WHERE status IN ('completed', 'failed', 'cancelled') AND (workflow, version) > (v.workflow, v.version)
               ORDER BY workflow, version LIMIT 1) next
     ), windows AS (
       SELECT v.workflow, v.version, coalesce(o.ms, d.retention_ms, $1) AS ms
         FROM versions v
         LEFT JOIN unnest($2::text[], $3::bigint[]) AS o(workflow, ms) USING (workflow)
         LEFT JOIN workflows d ON d.workflow = v.workflow AND d.version = v.version
     ), doomed AS (
       SELECT c.id, c.overdue FROM windows w
        CROSS JOIN LATERAL (
              SELECT r.id, extract(epoch FROM now() - w.ms * interval '1 millisecond' - r.finished_at) AS overdue FROM runs r
               WHERE r.workflow = w.workflow AND r.version = w.version AND r.status IN ('completed', 'failed', 'cancelled')
                 AND r.finished_at < now() - w.ms * interval '1 millisecond'
                 -- Written as per-row probes (a primary key and runs_parent_idx lookup), not NOT EXISTS: the
                 -- planner turned those into anti joins that read every unfinished run and sort the candidates.
                 AND (r.parent_id IS NULL OR (SELECT p.status IN ('completed', 'failed', 'cancelled') FROM runs p WHERE p.id = r.parent_id) IS NOT FALSE)
                 AND (SELECT true FROM runs k WHERE k.parent_id = r.id AND k.status NOT IN ('completed', 'failed', 'cancelled') LIMIT 1) IS NULL
               ORDER BY r.finished_at
               LIMIT $4
               FOR UPDATE OF r SKIP LOCKED) c
        WHERE w.ms > 0
        LIMIT $4
     )
     SELECT (SELECT count(*)::int FROM delete_runs(ARRAY(SELECT id FROM doomed))) AS deleted,
            (SELECT coalesce(max(overdue), 0)::float8 FROM doomed) AS overdue_seconds`;

/**
 * Deletes finished runs older than their workflow's window, through delete_runs() (the one path that
 * removes history rows; it deletes their rows in every table of RUN_TABLES). Per workflow version, a
 * range scan of runs_finished_idx, oldest first; the versions are found by a loose index scan of the
 * same index (one probe per version), so a million finished runs cost as much as the batch.
 *
 * A run is kept while its parent is unfinished (a parent in progress keeps its children for whoever
 * looks at it; the outcome it waits for is already in its child step, written with the child's end)
 * and while any of its children is unfinished (the tree stays linked: delete_runs() would clear their
 * parent_id). A run whose parent is gone counts as having a finished one (the probe finds no row). Either is decided in this statement's snapshot; a parent retried at that very
 * moment still finds each child's outcome in its steps. delete_runs() checks the status again.
 * Returns how many runs it deleted, and how far past its window (s) the most overdue of them was. A batch
 * takes each version's oldest first, but fills up from the versions in (workflow, version) order, so that is
 * how far behind retention is on the versions the batch reached, not on every version.
 */
export async function deleteFinishedRuns(tx: SqlExecutor, windows: RetentionWindows, limit: number): Promise<FinishedRunsBatch> {
  const [row] = await tx.query<{ deleted: number; overdue_seconds: number }>(DELETE_FINISHED_RUNS, [...windowParams(windows), limit]);
  return { deleted: row.deleted, overdueSeconds: row.overdue_seconds };
}

/** What one batch of finished runs did (deleteFinishedRuns). */
export interface FinishedRunsBatch {
  deleted: number;
  overdueSeconds: number;
}

const DELETE_SENT_OUTBOX_ROWS = `WITH doomed AS (
    SELECT id FROM outbox
     WHERE status = 'sent' AND sent_at < now() - $1 * interval '1 millisecond'
     ORDER BY sent_at LIMIT $2
     FOR UPDATE SKIP LOCKED
  )
  DELETE FROM outbox WHERE id IN (SELECT id FROM doomed) RETURNING id`;

/**
 * Deletes sent outbox rows older than `olderThanMs` (the default window). The enqueuer deletes what it sent at
 * once; a row is left `sent` only when that delete failed, and the enqueuer removes those after
 * OUTBOX_STALE_IN_FLIGHT_MS while it runs (not with DISPATCH=none): this is the backstop. Pending,
 * retrying and in-flight rows are never touched (outbox_sent_idx holds only sent rows). Returns how many.
 */
export async function deleteSentOutboxRows(tx: SqlExecutor, olderThanMs: number, limit: number): Promise<number> {
  return (await tx.query(DELETE_SENT_OUTBOX_ROWS, [olderThanMs, limit])).length;
}

const DELETE_DEAD_LETTERS = `WITH doomed AS (
    SELECT d.id FROM dead_letters d
      LEFT JOIN unnest($2::text[], $3::bigint[]) AS o(workflow, ms) ON o.workflow = split_part(d.queue, ':', 1)
      LEFT JOIN workflows w ON w.workflow = split_part(d.queue, ':', 1) AND w.version = split_part(d.queue, ':', 2)
     WHERE coalesce(o.ms, w.retention_ms, $1) > 0 AND d.created_at < now() - coalesce(o.ms, w.retention_ms, $1) * interval '1 millisecond'
     ORDER BY d.created_at LIMIT $4
     FOR UPDATE OF d SKIP LOCKED
  )
  DELETE FROM dead_letters WHERE id IN (SELECT id FROM doomed) RETURNING id`;

/**
 * Deletes dead letters older than the window of their queue's workflow (a queue is
 * `<workflow>:<version>[:<shard>]`), oldest first by dead_letters_created_idx. Returns how many.
 */
export async function deleteExpiredDeadLetters(tx: SqlExecutor, windows: RetentionWindows, limit: number): Promise<number> {
  return (await tx.query(DELETE_DEAD_LETTERS, [...windowParams(windows), limit])).length;
}
