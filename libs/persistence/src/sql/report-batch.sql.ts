import { prepared, type SqlExecutor } from '../database';
import {
  type FinishedRow,
  type OutcomeReport,
  outcomeReportValues,
  type RecordedRow,
  type TaskReport,
  taskAttemptTimes,
  taskReportValues,
} from './reports.sql';

/**
 * Task results ($1-$13 and $20, as wf_record_tasks's $1-$14) and outcomes ($14-$19, as wf_finish_runs's) in one statement, which
 * commits on its own (or in the caller's transaction): for outcomes each at a run and revision one of the task
 * results is at (a batch of runs' last task results with their outcomes). One round trip and one commit for the
 * batch, instead of BEGIN, two statements and COMMIT.
 *
 * `owner` locks all their runs, in id order as every statement does (see reports.sql.ts), and an outcome's run is
 * `held` when `owner` holds it: no second lock, so none taken out of id order, and an outcome stands or falls
 * with its run's task results, as in two statements. The task results' claims of runs the batch finishes ($12)
 * are not refreshed: one statement must not update a row twice. `hasSteps` also counts the tasks this very
 * statement inserted (its own `inserted`, which its snapshot of tasks does not show).
 *
 * Rows as wf_finish_runs's, the first of them with every task input's answer in order (`recorded`, a JSON array
 * of {owned, task}).
 */
const RECORD_TASKS_AND_FINISH = prepared(
  'wf_record_tasks_and_finish',
  `WITH task_input AS (
    SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::integer[], $5::text[], $6::text[],
                         $7::integer[], $8::jsonb[], $9::jsonb[], $10::integer[], $11::text[], $20::jsonb[])
             WITH ORDINALITY AS i(run_id, revision, key, seq, name, status, attempts, output, error, duration_ms, kind, attempt_times, n)
  ), owner AS MATERIALIZED (
    SELECT r.id, r.revision
       FROM (SELECT DISTINCT run_id, revision FROM task_input ORDER BY run_id, revision) i
       CROSS JOIN LATERAL (SELECT id, revision FROM runs
                            WHERE id = i.run_id AND revision = i.revision AND status = 'running' COLLATE "C"
                              FOR UPDATE) r
  ), refreshed AS (
    -- A task result refreshes a claim last refreshed more than $13 ms ago, except of a run whose outcome
    -- follows in the same transaction or statement ($12): that write moves the run on anyway, a row version
    -- less is an index entry less per index, and one statement must not update a row twice.
    UPDATE runs r SET heartbeat_at = now(), updated_at = now()
      FROM owner o
     WHERE r.id = o.id AND r.id <> ALL ($12::uuid[])
       AND (r.heartbeat_at IS NULL OR r.heartbeat_at < now() - $13 * interval '1 millisecond')
  ), inserted AS (
    INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error, started_at, attempt_times)
    SELECT i.run_id, i.key, i.kind, i.seq, i.name, i.status, i.attempts, i.output, i.error,
           now() - i.duration_ms * interval '1 millisecond', i.attempt_times
      FROM task_input i JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
    ON CONFLICT (run_id, key) DO NOTHING
    RETURNING run_id, key, kind, seq, status, attempts, output, error
  ), recorded AS (
    SELECT i.n, o.id IS NOT NULL AS owned,
           (SELECT row_to_json(s) FROM (SELECT key, kind, seq, status, attempts, output, error FROM inserted t
                                         WHERE t.run_id = i.run_id AND t.key = i.key) s) AS task
      FROM task_input i LEFT JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
  ), outcome_input AS (
    SELECT * FROM unnest($14::uuid[], $15::integer[], $16::text[], $17::jsonb[], $18::jsonb[], $19::boolean[])
             WITH ORDINALITY AS i(run_id, revision, status, output, error, return_run, n)
  ), first_outcomes AS (
    SELECT DISTINCT ON (run_id, revision) * FROM outcome_input ORDER BY run_id, revision, n
  ), held AS MATERIALIZED (
    SELECT o.id, o.revision FROM owner o
     WHERE EXISTS (SELECT FROM first_outcomes f WHERE f.run_id = o.id AND f.revision = o.revision)
  ), finished AS (
    -- By id alone: held checked the status and revision under the lock it still holds. A status
    -- condition here let the plan drive the update from runs_idle_claims_idx again (see owner).
    UPDATE runs r
       SET status = i.status, output = i.output, error = i.error, revision = r.revision + 1,
           heartbeat_at = NULL, finished_at = now(), updated_at = now()
      FROM held h JOIN first_outcomes i ON i.run_id = h.id AND i.revision = h.revision
     WHERE r.id = h.id
    RETURNING r.*, i.n
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', status, revision, claimed_by FROM finished
  ), parent_steps AS (
    UPDATE tasks t
       SET status = 'completed',
           output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                       'output', e.output, 'error', e.error)
      FROM finished e
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
  ), announced AS (
    SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_run_finished', id::text) FROM finished) n) AS finished,
           (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken_parents WHERE status = 'waiting') n) AS parents
  )
  SELECT f.revision AS "finishedRevision", f.workflow AS "finishedWorkflow", v.*,
         CASE WHEN i.n = 1 THEN (SELECT json_agg(json_build_object('owned', r.owned, 'task', r.task) ORDER BY r.n) FROM recorded r) END AS recorded
    FROM outcome_input i LEFT JOIN finished f ON f.n = i.n
    LEFT JOIN LATERAL (SELECT id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
                              idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId",
                              due_at AS "dueAt", claimed_by AS "claimedBy", build_id AS "buildId", heartbeat_at AS "heartbeatAt", created_at AS "createdAt",
                              updated_at AS "updatedAt", started_at AS "startedAt", finished_at AS "finishedAt", progress, progress_at AS "progressAt",
                              EXISTS (SELECT FROM tasks t WHERE t.run_id = e.id) OR EXISTS (SELECT FROM inserted t WHERE t.run_id = e.id) AS "hasSteps"
                         FROM (SELECT f.*) e WHERE i.return_run AND f.id IS NOT NULL) v ON true
    CROSS JOIN announced
   ORDER BY i.n`,
  { genericPlan: true },
);

/** Records task results and finishes runs in one statement (see above): each outcome's answer, in order, the first with the task results' answers. */
export async function recordTaskResultsAndFinishRuns(
  db: SqlExecutor,
  tasks: TaskReport[],
  outcomes: OutcomeReport[],
  refreshAfterMs: number,
): Promise<(FinishedRow & { recorded: RecordedRow[] | null })[]> {
  return db.query<FinishedRow & { recorded: RecordedRow[] | null }>(RECORD_TASKS_AND_FINISH, [
    ...taskReportValues(tasks),
    outcomes.map((item) => item.runId),
    refreshAfterMs,
    ...outcomeReportValues(outcomes),
    taskAttemptTimes(tasks),
  ]);
}
