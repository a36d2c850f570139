import type { ErrorDetails, JsonValue, StoredTask, TaskResultRequest } from '@nest-durable/common';
import { prepared, type SqlExecutor } from '../database';
import type { RunEntity } from '../entities/run.entity';
import { jsonParam } from './json-param';
import { STEPS_RUN_AGAIN } from './steps.sql';

/*
 * What a worker reports under its claim: task results and the run's outcome (finish, retry later, release). Each
 * write is revision-checked in the statement that makes it, so a worker that lost its claim (taken over after
 * going idle, or the run was cancelled) can change nothing: the statement matches no run and answers so (the
 * caller tells a stale revision from a missing run, fencing.sql.ts). Every transition appends its run_transitions
 * row in the same statement, so the history cannot miss one; NOTIFYs are delivered at commit, so woken readers
 * see the final rows.
 *
 * The statements taking many runs lock them in id order, as every statement that locks several runs does, so two
 * of them cannot deadlock: a MATERIALIZED CTE (`owner`, `held`) locks, in id order, the runs of its input (rows
 * with run_id and revision; repeats allowed) still running at that revision, and yields their id and revision.
 * Each run is looked up by its id in a LATERAL subquery (never flattened: it holds a row lock), so the plan probes
 * the primary key per run: joined to the input instead, the generic plan of a database planned small or never
 * analyzed scanned every entry of `runs_idle_claims_idx` (`status = 'running'`, dead entries included until a
 * vacuum), 0.22 ms at a few thousand (EXPLAIN in docs/benchmarks.md). The nested loop takes the locks in its sorted
 * outer order: id order.
 *
 * A run looked up by its id compares its status `COLLATE "C"` (here and in every statement that does): the same
 * test for text, but the planner can no longer prove from it the predicate of a partial index on status
 * (`runs_idle_claims_idx`, `runs_ready_idx`, …), so it cannot read one of those instead of the primary key.
 * Otherwise it does, once an ANALYZE saw few running or ready runs (a database of finished history, a quiet
 * hour): that index looks a page long, and each lookup then read every running run, or every run of the ready
 * backlog (a parent woken at its child's end: 5,000 entries and 3.9 ms of a 7 ms report batch on a 5-million-run
 * history, docs/benchmarks.md "History").
 *
 * A batch of task results with the outcomes they lock (a run's last task result and its completion) runs both in
 * one statement instead (report-batch.sql.ts), which commits on its own: one round trip and one commit for the
 * batch, instead of BEGIN, two statements and COMMIT.
 */

export type RunOutcome = { status: 'completed'; output: JsonValue } | { status: 'failed'; error: ErrorDetails };

/** A task result reported for a run. */
export type TaskReport = { runId: string; task: TaskResultRequest };

/** An outcome reported for a run at the revision its worker holds; with `returnRun` its answer carries the ended run. */
export type OutcomeReport = { runId: string; expectedRevision: number; outcome: RunOutcome; returnRun?: boolean };

/** A task result's answer: whether its run was held at its revision, and the task inserted for it (none when a result for its key was recorded first). */
export type RecordedRow = { owned: boolean; task: StoredTask | null };

/**
 * An outcome's answer: the revision and workflow it finished its run at (null: refused) and, with `returnRun`, the
 * ended run under RunEntity's property names, and whether it has steps (`hasSteps`, null without `returnRun`).
 */
export type FinishedRow = { finishedRevision: number | null; finishedWorkflow: string | null } & Partial<RunEntity> & { hasSteps: boolean | null };

/** The task results' $1-$11 (parallel arrays; the last their kinds: a task, or a patch marker). */
export function taskReportValues(items: TaskReport[]): unknown[] {
  return [
    items.map(({ runId }) => runId),
    items.map(({ task }) => task.expectedRevision),
    items.map(({ task }) => task.key),
    items.map(({ task }) => task.seq),
    items.map(({ task }) => task.name),
    items.map(({ task }) => task.status),
    items.map(({ task }) => task.attempts),
    items.map(({ task }) => jsonParam(task.output)),
    items.map(({ task }) => jsonParam(task.error)),
    items.map(({ task }) => task.durationMs ?? null),
    items.map(({ task }) => ('kind' in task && task.kind) || 'task'),
  ];
}

/**
 * The task results' attempt times (one more parallel array, after the statements' other parameters: wf_record_tasks's
 * $14, wf_record_tasks_and_finish's $20): each a JSON array, or null from a worker that sent none.
 */
export function taskAttemptTimes(items: TaskReport[]): unknown[] {
  return items.map(({ task }) => (task.attemptTimes ? JSON.stringify(task.attemptTimes) : null));
}

/** The outcomes' six parallel arrays. */
export function outcomeReportValues(items: OutcomeReport[]): unknown[] {
  return [
    items.map((item) => item.runId),
    items.map((item) => item.expectedRevision),
    items.map((item) => item.outcome.status),
    items.map((item) => (item.outcome.status === 'completed' ? jsonParam(item.outcome.output) : null)),
    items.map((item) => (item.outcome.status === 'failed' ? jsonParam(item.outcome.error) : null)),
    items.map((item) => item.returnRun ?? false),
  ];
}

/**
 * Records task results ($1-$11 and $14, parallel arrays; $12 runs whose outcome the same transaction writes next; $13 the
 * claim refresh age in ms): the runs still held at each revision are locked (`owner`), their claims refreshed,
 * and the results inserted through them only. The first result recorded for a key wins (ON CONFLICT DO NOTHING,
 * under the run's lock): a later writer finds its key taken (`owned`, no task) and adopts the stored one, so each
 * task has exactly one recorded result. One row per input, in order.
 *
 * A result refreshes its run's claim only once the last refresh is older than $13 (the coordinator passes a tenth
 * of the claim idle time). A heartbeat skips a run locked by a write, so a run written without pause is kept
 * alive by its results; but refreshing on every one made a new version of the run's row, with entries in its
 * indexes (`heartbeat_at` is indexed), per step: 0.13 ms of PostgreSQL's 0.9 ms a step here (docs/benchmarks.md).
 */
const RECORD_TASKS = prepared(
  'wf_record_tasks',
  `WITH task_input AS (
    SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::integer[], $5::text[], $6::text[],
                         $7::integer[], $8::jsonb[], $9::jsonb[], $10::integer[], $11::text[], $14::jsonb[])
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
  )
  SELECT owned, task FROM recorded ORDER BY n`,
  { genericPlan: true },
);

/** Records task results under their claims (see above): each input's answer, in order. */
export async function recordTaskResults(
  db: SqlExecutor,
  items: TaskReport[],
  options: { finishing: string[]; refreshAfterMs: number },
): Promise<RecordedRow[]> {
  return db.query<RecordedRow>(RECORD_TASKS, [...taskReportValues(items), options.finishing, options.refreshAfterMs, taskAttemptTimes(items)]);
}

/**
 * Finishes runs ($1-$6, parallel arrays: run ids, revisions, statuses, outputs, errors, return_run): the first
 * outcome per run and revision (a second one for the same revision is stale, as if sent after the first), for
 * runs still running at that revision (`held`, locked in id order), moves the run to its terminal state at
 * revision + 1, appends the transition, resolves the step of a parent waiting on it (its child step resolves with
 * the child's status and output, and the parent becomes due now) and announces both (wf_run_finished,
 * wf_runs_ready).
 *
 * Per outcome input, in order: the revision and workflow it finished its run at (null: refused), and with
 * return_run the ended run and whether it has steps. The ended row is the one the update made (this statement's
 * snapshot of runs is from before it). The EXISTS reads that snapshot too, taken before held waited for its lock:
 * a task committed meanwhile would be missed. None can be: tasks are written only under the claim, whose worker
 * sends them before its outcome, in an earlier request or earlier in this transaction, as a worker sends a run's
 * reports one batch after another (CoordinatorApi), and a resent one waits on the lock or key of the first until
 * it commits.
 */
const FINISH_RUNS = prepared(
  'wf_finish_runs',
  `WITH outcome_input AS (
    SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::jsonb[], $5::jsonb[], $6::boolean[])
             WITH ORDINALITY AS i(run_id, revision, status, output, error, return_run, n)
  ), first_outcomes AS (
    SELECT DISTINCT ON (run_id, revision) * FROM outcome_input ORDER BY run_id, revision, n
  ), held AS MATERIALIZED (
    SELECT r.id, r.revision
       FROM (SELECT DISTINCT run_id, revision FROM first_outcomes ORDER BY run_id, revision) i
       CROSS JOIN LATERAL (SELECT id, revision FROM runs
                            WHERE id = i.run_id AND revision = i.revision AND status = 'running' COLLATE "C"
                              FOR UPDATE) r
  ), finished AS (
    -- By id alone: held checked the status and revision under the lock it still holds. A status
    -- condition here let the plan drive the update from runs_idle_claims_idx again (see held).
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
  SELECT f.revision AS "finishedRevision", f.workflow AS "finishedWorkflow", v.*
    FROM outcome_input i LEFT JOIN finished f ON f.n = i.n
    LEFT JOIN LATERAL (SELECT id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
                              idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId",
                              due_at AS "dueAt", claimed_by AS "claimedBy", build_id AS "buildId", heartbeat_at AS "heartbeatAt", created_at AS "createdAt",
                              updated_at AS "updatedAt", started_at AS "startedAt", finished_at AS "finishedAt", progress, progress_at AS "progressAt",
                              EXISTS (SELECT FROM tasks t WHERE t.run_id = e.id) AS "hasSteps"
                         FROM (SELECT f.*) e WHERE i.return_run AND f.id IS NOT NULL) v ON true
    CROSS JOIN announced
   ORDER BY i.n`,
);

/** Finishes runs under their claims (see above): each outcome's answer, in order. */
export async function finishRuns(db: SqlExecutor, items: OutcomeReport[]): Promise<FinishedRow[]> {
  return db.query<FinishedRow>(FINISH_RUNS, outcomeReportValues(items));
}

/**
 * Workflow-level retry: instead of failing, run $1, still running at revision $2, waits $4 ms (error $3) and then
 * runs again as attempt + 1, at revision + 1. Completed steps are kept (it resumes from its checkpoints); those
 * STEPS_RUN_AGAIN names are removed so they run again. Announced now only if it is due now.
 */
const RETRY_RUN_LATER = `WITH retried AS (
    UPDATE runs
       SET status = 'waiting', attempt = attempt + 1, error = $3, revision = revision + 1,
           due_at = now() + $4 * interval '1 millisecond', heartbeat_at = NULL, updated_at = now()
     WHERE id = $1 AND revision = $2 AND status = 'running' COLLATE "C"
    RETURNING id, revision, claimed_by, queue, due_at
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', 'waiting', revision, claimed_by FROM retried
  ), cleared AS (
    DELETE FROM tasks t USING retried r WHERE t.run_id = r.id AND ${STEPS_RUN_AGAIN}
  )
  SELECT revision, CASE WHEN due_at <= now() THEN (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM retried) n) END FROM retried`;

/** Retries a run later under its claim (see above): its new revision, or undefined when the claim is not held. */
export async function retryRunLater(
  db: SqlExecutor,
  params: { runId: string; expectedRevision: number; error: ErrorDetails; delayMs: number },
): Promise<{ revision: number } | undefined> {
  const [row] = await db.query<{ revision: number }>(RETRY_RUN_LATER, [params.runId, params.expectedRevision, jsonParam(params.error), params.delayMs]);
  return row && { revision: row.revision };
}

/** Gives run $1, still running at revision $2, back (worker shutting down): queued and due now, for any worker to take at once. */
const RELEASE_RUN = `WITH released AS (
    UPDATE runs
       SET status = 'queued', due_at = now(), revision = revision + 1, heartbeat_at = NULL, updated_at = now()
     WHERE id = $1 AND revision = $2 AND status = 'running' COLLATE "C"
    RETURNING id, revision, claimed_by, queue
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', 'queued', revision, claimed_by FROM released
  )
  SELECT revision, (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM released) n) FROM released`;

/** Releases a run under its claim (see above): its new revision, or undefined when the claim is not held. */
export async function releaseRun(db: SqlExecutor, runId: string, expectedRevision: number): Promise<{ revision: number } | undefined> {
  const [row] = await db.query<{ revision: number }>(RELEASE_RUN, [runId, expectedRevision]);
  return row && { revision: row.revision };
}

/**
 * Locks the given runs in id order, for a transaction about to change them in several statements. Every
 * statement that changes several runs locks them in id order; a transaction whose statements each lock a
 * different subset would otherwise take its locks out of that order (this statement's subset, then that one's)
 * and could deadlock with one taking them in order.
 */
const LOCK_RUNS_IN_ORDER = `SELECT 1 FROM runs WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`;

/** Locks runs in id order (see above), in the caller's transaction. */
export async function lockRunsInOrder(db: SqlExecutor, runIds: string[]): Promise<void> {
  await db.query(LOCK_RUNS_IN_ORDER, [runIds]);
}
