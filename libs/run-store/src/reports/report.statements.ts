import { appendHistory, lockRunning, notifyFinished, notifyReady, RUN_COLUMNS, STEP_COLUMNS, wakeParents } from '../runs/run-sql';

/**
 * The statements of a worker's reports (see ReportRepository), built from two sets of CTEs: the task results'
 * and the outcomes'. Alone, each is one statement; a batch of task results with the outcomes they lock (a
 * run's last task result and its completion) runs both sets in one statement instead, which commits on its
 * own: one round trip and one commit for the batch, instead of BEGIN, two statements and COMMIT.
 */

/**
 * Task results ($1-$10, parallel arrays; $11 runs whose outcome the same transaction or statement writes;
 * $12 the claim refresh age): `task_input`, the runs still held at each revision locked (`owner`), claims
 * refreshed, and the results `inserted`. `recorded` is each input's answer: whether its run was held, and the
 * task inserted for it (none when a result for its key was recorded first).
 */
const RECORD_CTES = `task_input AS (
         SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::integer[], $5::text[], $6::text[],
                              $7::integer[], $8::jsonb[], $9::jsonb[], $10::integer[])
                  WITH ORDINALITY AS i(run_id, revision, key, seq, name, status, attempts, output, error, duration_ms, n)
       ), owner AS MATERIALIZED (
         ${lockRunning('task_input')}
       ), refreshed AS (
         -- A task result refreshes a claim last refreshed more than $12 ms ago, except of a run whose outcome
         -- follows in the same transaction or statement ($11): that write moves the run on anyway, a row version
         -- less is an index entry less per index, and one statement must not update a row twice.
         UPDATE runs r SET heartbeat_at = now(), updated_at = now()
           FROM owner o
          WHERE r.id = o.id AND r.id <> ALL ($11::uuid[])
            AND (r.heartbeat_at IS NULL OR r.heartbeat_at < now() - $12 * interval '1 millisecond')
       ), inserted AS (
         INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error, started_at)
         SELECT i.run_id, i.key, 'task', i.seq, i.name, i.status, i.attempts, i.output, i.error,
                now() - i.duration_ms * interval '1 millisecond'
           FROM task_input i JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
         ON CONFLICT (run_id, key) DO NOTHING
         RETURNING run_id, ${STEP_COLUMNS}
       ), recorded AS (
         SELECT i.n, o.id IS NOT NULL AS owned,
                (SELECT row_to_json(s) FROM (SELECT ${STEP_COLUMNS} FROM inserted t
                                              WHERE t.run_id = i.run_id AND t.key = i.key) s) AS task
           FROM task_input i LEFT JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
       )`;

/**
 * Outcomes (parameters from $`first`, six parallel arrays): `outcome_input`, the first outcome per run and
 * revision, the runs still held at it (`held`, which `lockedBy` a set of CTEs before it locked, or else locks
 * itself), `finished` (each ended run's row as the update made it), their history, their waiting parents woken,
 * and the NOTIFYs (delivered at commit).
 */
function outcomeCtes(first: number, lockedBy?: string): string {
  const p = (k: number) => `$${first + k}`;
  return `outcome_input AS (
         SELECT * FROM unnest(${p(0)}::uuid[], ${p(1)}::integer[], ${p(2)}::text[], ${p(3)}::jsonb[], ${p(4)}::jsonb[], ${p(5)}::boolean[])
                  WITH ORDINALITY AS i(run_id, revision, status, output, error, return_run, n)
       ), first_outcomes AS (
         SELECT DISTINCT ON (run_id, revision) * FROM outcome_input ORDER BY run_id, revision, n
       ), held AS MATERIALIZED (
         ${
           lockedBy
             ? `SELECT o.id, o.revision FROM ${lockedBy} o
          WHERE EXISTS (SELECT FROM first_outcomes f WHERE f.run_id = o.id AND f.revision = o.revision)`
             : lockRunning('first_outcomes')
         }
       ), finished AS (
         -- By id alone: held checked the status and revision under the lock it still holds. A status
         -- condition here let the plan drive the update from runs_idle_claims_idx again (see lockRunning).
         UPDATE runs r
            SET status = i.status, output = i.output, error = i.error, revision = r.revision + 1,
                heartbeat_at = NULL, finished_at = now(), updated_at = now()
           FROM held h JOIN first_outcomes i ON i.run_id = h.id AND i.revision = h.revision
          WHERE r.id = h.id
         RETURNING r.*, i.n
       ), history AS (
         ${appendHistory('finished', `'running'`, 'status', 'claimed_by')}
       ), ${wakeParents('finished')}, announced AS (
         SELECT ${notifyFinished('finished')} AS finished, ${notifyReady('woken_parents')} AS parents
       )`;
}

/**
 * Per outcome input, in order: the revision and workflow it finished its run at (null: refused), and with
 * return_run the ended run and whether it has steps; `extra` adds columns. The ended row is the one the update
 * made (this statement's snapshot of runs is from before it). The EXISTS reads that snapshot too, taken before
 * held waited for its lock: a task committed meanwhile would be missed. None can be: tasks are written only under
 * the claim, whose worker sends them before its outcome, in an earlier request, earlier in this transaction, or
 * in this statement (`steps_also`: its own `inserted`), as a worker sends a run's reports one batch after another
 * (CoordinatorApi), and a resent one waits on the lock or key of the first until it commits.
 */
function finishedRows(stepsAlso: string, extra = ''): string {
  return `SELECT f.revision AS "finishedRevision", f.workflow AS "finishedWorkflow", v.*${extra}
         FROM outcome_input i LEFT JOIN finished f ON f.n = i.n
         LEFT JOIN LATERAL (SELECT ${RUN_COLUMNS}, EXISTS (SELECT FROM tasks t WHERE t.run_id = e.id)${stepsAlso} AS "hasSteps"
                              FROM (SELECT f.*) e WHERE i.return_run AND f.id IS NOT NULL) v ON true
         CROSS JOIN announced
        ORDER BY i.n`;
}

/** Records task results: one row per input, in order (see ReportRepository.recordTasks). */
export const RECORD_TASKS = `WITH ${RECORD_CTES}
       SELECT owned, task FROM recorded ORDER BY n`;

/** Finishes runs, $1-$6 (see ReportRepository.finishMany). */
export const FINISH_RUNS = `WITH ${outcomeCtes(1)}
       ${finishedRows('')}`;

/**
 * Task results ($1-$12) and outcomes ($13-$18) in one statement, for outcomes each at a run and revision one of
 * the task results is at: `owner` locks all their runs, in id order as every statement does, and an outcome's
 * run is `held` when `owner` holds it, so an outcome stands or falls with its run's task results, as in two
 * statements. Rows as FINISH_RUNS's, the first of them with every task input's answer in order (`recorded`, a
 * JSON array of {owned, task}).
 */
export const RECORD_TASKS_AND_FINISH = `WITH ${RECORD_CTES}, ${outcomeCtes(13, 'owner')}
       ${finishedRows(
         ' OR EXISTS (SELECT FROM inserted t WHERE t.run_id = e.id)',
         `,
              CASE WHEN i.n = 1 THEN (SELECT json_agg(json_build_object('owned', r.owned, 'task', r.task) ORDER BY r.n) FROM recorded r) END AS recorded`,
       )}`;
