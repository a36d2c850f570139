import type { RegisteredWorkflow } from '@nest-durable/common';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/**
 * How long what a workflow leaves behind is kept (ms; 0 keeps): the windows configured for particular
 * workflows (RUN_RETENTION_OVERRIDES), else the window a version declares in code (`workflows.retention_ms`,
 * registered by its workers), else the default (RUN_RETENTION_MS).
 */
export interface RetentionWindows {
  defaultMs: number;
  byWorkflow: Record<string, number>;
}

const FINISHED = `('completed', 'failed', 'cancelled')`;

/** The windows as two parallel arrays ($2 names, $3 milliseconds) and the default ($1). */
function windowParams(windows: RetentionWindows): unknown[] {
  const entries = Object.entries(windows.byWorkflow);
  return [windows.defaultMs, entries.map(([name]) => name), entries.map(([, ms]) => ms)];
}

/**
 * One batch of finished runs past their windows (see deleteFinishedRuns): $1 the default window, $2/$3
 * the workflows with configured windows and those windows (ms), $4 the most runs to delete.
 */
export const DELETE_FINISHED_RUNS = `WITH RECURSIVE versions AS (
       (SELECT workflow, version FROM runs WHERE status IN ${FINISHED} ORDER BY workflow, version LIMIT 1)
       UNION ALL
       SELECT next.workflow, next.version FROM versions v
        CROSS JOIN LATERAL (
              SELECT workflow, version FROM runs
               WHERE status IN ${FINISHED} AND (workflow, version) > (v.workflow, v.version)
               ORDER BY workflow, version LIMIT 1) next
     ), windows AS (
       SELECT v.workflow, v.version, coalesce(o.ms, d.retention_ms, $1) AS ms
         FROM versions v
         LEFT JOIN unnest($2::text[], $3::bigint[]) AS o(workflow, ms) USING (workflow)
         LEFT JOIN workflows d ON d.workflow = v.workflow AND d.version = v.version
     ), doomed AS (
       SELECT c.id FROM windows w
        CROSS JOIN LATERAL (
              SELECT r.id FROM runs r
               WHERE r.workflow = w.workflow AND r.version = w.version AND r.status IN ${FINISHED}
                 AND r.finished_at < now() - w.ms * interval '1 millisecond'
                 -- Written as per-row probes (a primary key and runs_parent_idx lookup), not NOT EXISTS: the
                 -- planner turned those into anti joins that read every unfinished run and sort the candidates.
                 AND (r.parent_id IS NULL OR (SELECT p.status IN ${FINISHED} FROM runs p WHERE p.id = r.parent_id) IS NOT FALSE)
                 AND (SELECT true FROM runs k WHERE k.parent_id = r.id AND k.status NOT IN ${FINISHED} LIMIT 1) IS NULL
               ORDER BY r.finished_at
               LIMIT $4
               FOR UPDATE OF r SKIP LOCKED) c
        WHERE w.ms > 0
        LIMIT $4
     )
     SELECT count(*)::int AS deleted FROM delete_runs(ARRAY(SELECT id FROM doomed))`;

/**
 * Retention's deletes. Each is one statement that deletes at most `limit` rows, oldest first, in a
 * transaction of its own (see `batch`), so no lock is held for long. None waits for a row lock (SKIP LOCKED): a row someone holds is left for the
 * next round. Rows a claim or a take may pick (queued, waiting, running runs; pending outbox rows) are
 * never candidates, so retention and the hot path do not meet on a row.
 */
@Injectable()
export class RetentionRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records the windows workflow versions declare in code, as a worker registered them (in the
   * registration's transaction, after its versions were upserted). Writes only what changed, so the
   * registrations every few seconds cost a primary-key probe per version. A version registered without
   * one goes back to the default.
   */
  async recordDeclaredWindows(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<void> {
    await tx.query(
      `UPDATE workflows w SET retention_ms = d.ms
         FROM unnest($1::text[], $2::text[], $3::bigint[]) AS d(workflow, version, ms)
        WHERE w.workflow = d.workflow AND w.version = d.version AND w.retention_ms IS DISTINCT FROM d.ms`,
      [workflows.map((w) => w.name), workflows.map((w) => w.version), workflows.map((w) => w.retentionMs ?? null)],
    );
  }

  /**
   * Deletes finished runs older than their workflow's window, through delete_runs() (the one path that
   * removes history rows; it cascades to their steps, transitions and events). Per workflow version, a
   * range scan of runs_finished_idx, oldest first; the versions are found by a loose index scan of the
   * same index (one probe per version), so a million finished runs cost as much as the batch.
   *
   * A run is kept while its parent is unfinished (a parent in progress keeps its children for whoever
   * looks at it; the outcome it waits for is already in its child step, written with the child's end)
   * and while any of its children is unfinished (the tree stays linked: deleting it would set their
   * parent_id to NULL). Either is decided in this statement's snapshot; a parent retried at that very
   * moment still finds each child's outcome in its steps. delete_runs() checks the status again.
   * Returns how many runs it deleted.
   */
  async deleteFinishedRuns(windows: RetentionWindows, limit: number): Promise<number> {
    const [{ deleted }] = await this.batch<{ deleted: number }>(DELETE_FINISHED_RUNS, [...windowParams(windows), limit]);
    return deleted;
  }

  /**
   * Deletes sent outbox rows older than the default window. The enqueuer deletes what it sent at once;
   * a row is left `sent` only when that delete failed, and the enqueuer removes those after
   * OUTBOX_STALE_IN_FLIGHT_MS while it runs (not with DISPATCH=none): this is the backstop. Pending,
   * retrying and in-flight rows are never touched (outbox_sent_idx holds only sent rows).
   */
  async deleteSentOutboxRows(defaultMs: number, limit: number): Promise<number> {
    if (defaultMs === 0) return 0;
    const rows = await this.batch(
      `WITH doomed AS (
         SELECT id FROM outbox
          WHERE status = 'sent' AND sent_at < now() - $1 * interval '1 millisecond'
          ORDER BY sent_at LIMIT $2
          FOR UPDATE SKIP LOCKED
       )
       DELETE FROM outbox WHERE id IN (SELECT id FROM doomed) RETURNING id`,
      [defaultMs, limit],
    );
    return rows.length;
  }

  /**
   * Deletes dead letters older than the window of their queue's workflow (a queue is
   * `<workflow>:<version>[:<shard>]`), oldest first by dead_letters_created_idx.
   */
  async deleteDeadLetters(windows: RetentionWindows, limit: number): Promise<number> {
    const rows = await this.batch(
      `WITH doomed AS (
         SELECT d.id FROM dead_letters d
           LEFT JOIN unnest($2::text[], $3::bigint[]) AS o(workflow, ms) ON o.workflow = split_part(d.queue, ':', 1)
           LEFT JOIN workflows w ON w.workflow = split_part(d.queue, ':', 1) AND w.version = split_part(d.queue, ':', 2)
          WHERE coalesce(o.ms, w.retention_ms, $1) > 0 AND d.created_at < now() - coalesce(o.ms, w.retention_ms, $1) * interval '1 millisecond'
          ORDER BY d.created_at LIMIT $4
          FOR UPDATE OF d SKIP LOCKED
       )
       DELETE FROM dead_letters WHERE id IN (SELECT id FROM doomed) RETURNING id`,
      [...windowParams(windows), limit],
    );
    return rows.length;
  }

  /**
   * One batch, in a transaction of its own: planned without JIT (the runs statement's estimates, a
   * recursive scan and per-version laterals, crossed jit_above_cost, and compiling it took 300 ms of a
   * 3 ms statement on 100,000 runs) and committed without waiting for the WAL flush (a delete lost in a
   * crash is done again next time).
   */
  private batch<T = unknown>(statement: string, params: unknown[]): Promise<T[]> {
    return this.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL jit = off; SET LOCAL synchronous_commit = off`);
      return tx.query<T>(statement, params);
    });
  }
}
