import { prepared, type SqlExecutor } from '../database';

/*
 * What a run shows of itself: the values it exposes (`run_values`, one row per run and name) and its last progress
 * (`runs.progress`), written by its worker under the claim and read by `GET /v1/runs/{id}/queries/{name}` and the
 * run view (see the run-values migration).
 */

/** One worker report of a run's values: at most one per run and revision in a statement (the caller merges them). */
export interface ValuesReport {
  runId: string;
  expectedRevision: number;
  /** Exposed values by name (may be empty). */
  exposed: Record<string, unknown>;
  /** The run's progress, when the report carries one (`null` is a progress too). */
  progress?: { value: unknown };
}

/**
 * Records values under each run's claim. `held` locks each run that is still running at the report's revision
 * (`FOR UPDATE`, in id order like every statement that changes several runs, see reports.sql.ts), so a claim, a
 * finish or a cancel that moves the run on waits for this commit or makes this statement write nothing for it: a
 * worker that lost its run changes nothing (its report is answered `recorded: false`, a 409). The run's other
 * writers take the same lock, so the value and the progress land between two of its revisions, never after its end.
 *
 * An exposed value is an upsert of its (run, name): written again (a replay exposes what it exposed before) it
 * changes nothing, and an unchanged one is not even rewritten (`IS DISTINCT FROM`). Progress overwrites the run's
 * last (not indexed: a HOT update when the page has room) and is announced on `wf_run_progress`, one notification
 * per run (payload `[id, workflow, version, progress, epoch ms]`, under 8000 bytes: progress is at most
 * PROGRESS_MAX_BYTES of JSON, which jsonb's text at most half again as long), only while some coordinator has a
 * feed open (`feed_watchers`, as run_transitions_notify does: a NOTIFY serialises commits).
 */
const RECORD_RUN_VALUES = prepared(
  'wf_record_run_values',
  `WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::integer[], $3::jsonb[], $4::boolean[], $5::jsonb[])
             WITH ORDINALITY AS i(run_id, revision, exposed, has_progress, progress, n)
  ), held AS MATERIALIZED (
    SELECT r.id, r.revision, r.workflow, r.version
       FROM (SELECT DISTINCT run_id, revision FROM input ORDER BY run_id, revision) i
       CROSS JOIN LATERAL (SELECT id, revision, workflow, version FROM runs
                            WHERE id = i.run_id AND revision = i.revision AND status = 'running' COLLATE "C"
                              FOR UPDATE) r
  ), progressed AS (
    UPDATE runs r SET progress = i.progress, progress_at = now()
      FROM held h JOIN input i ON i.run_id = h.id AND i.revision = h.revision
     WHERE r.id = h.id AND i.has_progress
    RETURNING r.id, h.workflow, h.version, i.progress, r.progress_at
  ), exposed AS (
    INSERT INTO run_values (run_id, name, value)
    SELECT h.id, e.key, e.value
      FROM held h JOIN input i ON i.run_id = h.id AND i.revision = h.revision
      CROSS JOIN LATERAL jsonb_each(i.exposed) e
    ON CONFLICT (run_id, name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
     WHERE run_values.value IS DISTINCT FROM EXCLUDED.value
  ), announced AS (
    SELECT count(*) AS n FROM (
      SELECT pg_notify('wf_run_progress',
                       json_build_array(id, workflow, version, progress, floor(extract(epoch FROM progress_at) * 1000))::text)
        FROM progressed
       WHERE EXISTS (SELECT FROM feed_watchers WHERE expires_at > now())) s
  )
  SELECT h.id IS NOT NULL AS recorded
    FROM input i LEFT JOIN held h ON h.id = i.run_id AND h.revision = i.revision
    CROSS JOIN announced
   ORDER BY i.n`,
);

/** Records the reports' values under their runs' claims (see above): for each report, in order, whether it was recorded. */
export async function recordRunValues(db: SqlExecutor, reports: ValuesReport[]): Promise<boolean[]> {
  const rows = await db.query<{ recorded: boolean }>(RECORD_RUN_VALUES, [
    reports.map((report) => report.runId),
    reports.map((report) => report.expectedRevision),
    reports.map((report) => JSON.stringify(report.exposed)),
    reports.map((report) => report.progress !== undefined),
    reports.map((report) => (report.progress === undefined ? null : JSON.stringify(report.progress.value))),
  ]);
  return rows.map((row) => row.recorded);
}

/** What a query of a run finds: nothing (no run), or the run with its value of that name and its last task of that name. */
export interface QueryRow {
  value: unknown;
  valueAt: Date | null;
  hasValue: boolean;
  taskOutput: unknown;
  taskAt: Date | null;
  hasTask: boolean;
}

/**
 * A query of run $1 by name $2: the value the run exposed under it, and the output of the last completed task of
 * that name (by its place in the run, then its time). One read on its own snapshot, no lock: the value and the task
 * are each as last committed. The task is found among the run's steps through tasks_pkey (run_id, key).
 */
const QUERY_RUN = `SELECT v.value, v.updated_at AS "valueAt", v.run_id IS NOT NULL AS "hasValue",
         t.output AS "taskOutput", t.created_at AS "taskAt", t.run_id IS NOT NULL AS "hasTask"
    FROM runs r
    LEFT JOIN run_values v ON v.run_id = r.id AND v.name = $2
    LEFT JOIN LATERAL (SELECT run_id, output, created_at FROM tasks
                        WHERE run_id = r.id AND kind = 'task' AND name = $2 AND status = 'completed'
                        ORDER BY seq DESC, created_at DESC LIMIT 1) t ON true
   WHERE r.id = $1`;

/** What run `runId` recorded under `name` (see above), or undefined when there is no such run. */
export async function queryRun(db: SqlExecutor, runId: string, name: string): Promise<QueryRow | undefined> {
  const [row] = await db.query<QueryRow>(QUERY_RUN, [runId, name]);
  return row;
}

/**
 * Every value run $1 exposed, by name: one row per value, or one row of nulls for a run with none (the LEFT JOIN
 * keeps the run), and no row when there is no such run. One read on its own snapshot, no lock; run_values' primary
 * key (run_id, name) gives the rows in order. A run has at most EXPOSED_NAMES_MAX of them, so no page is needed.
 */
const RUN_VALUES = `SELECT v.name, v.value, v.updated_at AS "updatedAt"
    FROM runs r
    LEFT JOIN run_values v ON v.run_id = r.id
   WHERE r.id = $1
   ORDER BY v.name`;

/** The values run `runId` exposed, by name; undefined when there is no such run. */
export async function runValues(db: SqlExecutor, runId: string): Promise<{ name: string; value: unknown; updatedAt: Date }[] | undefined> {
  const rows = await db.query<{ name: string | null; value: unknown; updatedAt: Date | null }>(RUN_VALUES, [runId]);
  if (rows.length === 0) return undefined;
  return rows.filter((row) => row.name !== null) as { name: string; value: unknown; updatedAt: Date }[];
}
