import { DatabaseUnavailableError, DurableError, ErrorDetails, JsonValue, StoredTask, TaskResultRequest } from '@nest-durable/common';
import { Database, findSteps, prepared, type RunEntity, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor, conflictsFor, unwrap } from '../runs/conflicts';
import { appendHistory, json, notifyReady, stepsToRerun } from '../runs/run-sql';
import { FINISH_RUNS, RECORD_TASKS, RECORD_TASKS_AND_FINISH } from './report.statements';

export type RunOutcome = { status: 'completed'; output: JsonValue } | { status: 'failed'; error: ErrorDetails };

/**
 * A run as the finish that ended it returned it (`returnRun`): the row a read after its commit would find,
 * and whether it has steps, so that a wait for its result on this coordinator needs no read of the run, and
 * of its steps only if it has some.
 */
export interface FinishedRun {
  run: RunEntity;
  hasSteps: boolean;
}

/** A finish that applied: the run's new revision and its workflow, and with `returnRun` the run. */
export interface RunFinished {
  revision: number;
  workflow: string;
  run?: FinishedRun;
}

/**
 * A report statement committed on its own (it ran outside a transaction), and a read answering it failed (of
 * the conflicts, adopted keys or outcomes that landed before): its reports landed, and must not be applied
 * again as if they had not (see ReportsService.apply). In a transaction the same failure rolls the
 * statement back and stays itself.
 */
export class ReportAnswerError extends DurableError {
  constructor(cause: Error) {
    super('report_answer_unread', `the reports were written, but reading their answer failed: ${cause.message}`, { cause });
  }
}

/**
 * The reads answering a report statement that ran on `on`. Where that statement committed on its own (`on`
 * is the database, not a transaction), their failure is a ReportAnswerError; an unavailable database stays
 * itself (a 503: the worker resends).
 */
async function answering<T>(committed: boolean, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!committed || error instanceof DatabaseUnavailableError || !(error instanceof Error)) throw error;
    throw new ReportAnswerError(error);
  }
}

/**
 * What a worker reports under its claim: task results and the run's outcome (finish, retry later,
 * release). Each write is revision-checked in the statement that makes it, so a worker that lost
 * its claim (taken over after going idle, or the run was cancelled) can change nothing.
 */
@Injectable()
export class ReportRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records a task result under the claim. The run row is updated (and so locked) only if it is
   * still running at the expected revision, and the task row is inserted only through it. The
   * first result recorded for a key wins (ON CONFLICT DO NOTHING); a later writer gets the stored
   * one back and adopts it, so each task has exactly one recorded result. Writing a result also
   * counts as a heartbeat once the claim's last refresh is older than `refreshAfterMs` (see recordTasks).
   */
  async recordTask(runId: string, task: TaskResultRequest, refreshAfterMs: number, on: SqlExecutor = this.db): Promise<StoredTask> {
    return unwrap((await this.recordTasks([{ runId, task }], refreshAfterMs, on))[0]);
  }

  /**
   * recordTask for many runs in one statement (a worker's coalesced reports): each result is
   * checked against its own run's revision, and comes back as the stored task or the error
   * (409 stale, 404 unknown) for that one alone. The runs are locked in id order (see lockInOrder).
   * `finishing`: runs whose outcome the same transaction writes next (their claim is not refreshed).
   *
   * A result refreshes its run's claim only once the last refresh is older than `refreshAfterMs` (the
   * coordinator passes a tenth of the claim idle time). A heartbeat skips a run locked by a write, so a run
   * written without pause is kept alive by its results; but refreshing on every one made a new version of the
   * run's row, with entries in its indexes (`heartbeat_at` is indexed), per step: 0.13 ms of PostgreSQL's
   * 0.9 ms a step here (docs/benchmarks.md).
   */
  async recordTasks(
    items: { runId: string; task: TaskResultRequest }[],
    refreshAfterMs: number,
    on: SqlExecutor = this.db,
    finishing: string[] = [],
  ): Promise<(StoredTask | Error)[]> {
    const rows = await on.query<RecordedRow>(prepared('wf_record_tasks', RECORD_TASKS, { genericPlan: true }), [
      ...recordParams(items),
      finishing,
      refreshAfterMs,
    ]);
    return answering(on === this.db, () => recordedResults(on, items, rows));
  }

  /**
   * recordTasks and finishMany in one statement, which commits on its own (or in `on`'s transaction): for
   * outcomes each at a run and revision one of the task results is at (a batch of runs' last task results with
   * their outcomes). Answers as the two would, one after the other in one transaction: an outcome is refused
   * with its run's task results (its run was not held at that revision).
   */
  async recordTasksAndFinish(
    tasks: { runId: string; task: TaskResultRequest }[],
    outcomes: { runId: string; expectedRevision: number; outcome: RunOutcome; returnRun?: boolean }[],
    refreshAfterMs: number,
    on: SqlExecutor = this.db,
  ): Promise<{ tasks: (StoredTask | Error)[]; outcomes: (RunFinished | Error)[] }> {
    const rows = await on.query<FinishedRow & { recorded: RecordedRow[] | null }>(
      prepared('wf_record_tasks_and_finish', RECORD_TASKS_AND_FINISH, { genericPlan: true }),
      [...recordParams(tasks), outcomes.map((item) => item.runId), refreshAfterMs, ...finishParams(outcomes)],
    );
    return answering(on === this.db, async () => ({
      tasks: await recordedResults(on, tasks, rows[0].recorded ?? []),
      outcomes: await finishedResults(on, outcomes, rows),
    }));
  }

  /**
   * Moves a running run at the expected revision to a terminal state, appends the transition,
   * resolves the step of a parent waiting on it, and announces both (NOTIFY is delivered at
   * commit, so woken readers see the final rows). With `returnRun` it also returns the run as it
   * ended (see FinishedRun).
   */
  async finish(runId: string, expectedRevision: number, outcome: RunOutcome, on: SqlExecutor = this.db, returnRun = false): Promise<RunFinished> {
    return unwrap((await this.finishMany([{ runId, expectedRevision, outcome, returnRun }], on))[0]);
  }

  /**
   * finish for many runs in one statement; each is checked on its own (see recordTasks). Of several
   * outcomes for one run at one revision only the first in `items` applies: it moves the revision
   * on, so the others are stale (409), as they would be if sent one after another.
   */
  async finishMany(
    items: { runId: string; expectedRevision: number; outcome: RunOutcome; returnRun?: boolean }[],
    on: SqlExecutor = this.db,
  ): Promise<(RunFinished | Error)[]> {
    const rows = await on.query<FinishedRow>(prepared('wf_finish_runs', FINISH_RUNS), finishParams(items));
    return answering(on === this.db, () => finishedResults(on, items, rows));
  }

  /**
   * Workflow-level retry: instead of failing, the run waits `delayMs` and then runs again as
   * attempt + 1. Completed steps are kept (it resumes from its checkpoints); failed ones and retry
   * waits are removed so they run again.
   */
  async retryLater(runId: string, expectedRevision: number, error: ErrorDetails, delayMs: number, on: SqlExecutor = this.db): Promise<{ revision: number }> {
    const [row] = await on.query<{ revision: number }>(
      `WITH retried AS (
         UPDATE runs
            SET status = 'waiting', attempt = attempt + 1, error = $3, revision = revision + 1,
                due_at = now() + $4 * interval '1 millisecond', heartbeat_at = NULL, updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id, revision, claimed_by, queue, due_at
       ), history AS (
         ${appendHistory('retried', `'running'`, `'waiting'`, 'claimed_by')}
       ), cleared AS (
         DELETE FROM tasks t USING retried r WHERE t.run_id = r.id AND ${stepsToRerun('t')}
       )
       SELECT revision, CASE WHEN due_at <= now() THEN ${notifyReady('retried')} END FROM retried`,
      [runId, expectedRevision, json(error), delayMs],
    );
    if (!row) throw await conflictFor(on, runId, expectedRevision);
    return { revision: row.revision };
  }

  /** Gives a running run back (worker shutting down): queued and due now, for any worker to take at once. */
  async release(runId: string, expectedRevision: number, on: SqlExecutor = this.db): Promise<{ revision: number }> {
    const [row] = await on.query<{ revision: number }>(
      `WITH released AS (
         UPDATE runs
            SET status = 'queued', due_at = now(), revision = revision + 1, heartbeat_at = NULL, updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id, revision, claimed_by, queue
       ), history AS (
         ${appendHistory('released', `'running'`, `'queued'`, 'claimed_by')}
       )
       SELECT revision, ${notifyReady('released')} FROM released`,
      [runId, expectedRevision],
    );
    if (!row) throw await conflictFor(on, runId, expectedRevision);
    return { revision: row.revision };
  }

  /**
   * Locks the given runs in id order, for a transaction about to change them in several
   * statements. Every statement that changes several runs locks them in id order; a transaction
   * whose statements each lock a different subset would otherwise take its locks out of that order
   * (this statement's subset, then that one's) and could deadlock with one taking them in order.
   */
  async lockInOrder(runIds: string[], on: SqlExecutor): Promise<void> {
    await on.query(`SELECT 1 FROM runs WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [runIds]);
  }
}

type TaskItem = { runId: string; task: TaskResultRequest };
type OutcomeItem = { runId: string; expectedRevision: number; outcome: RunOutcome; returnRun?: boolean };
/** A task result's answer from RECORD_TASKS: whether its run was held, and the task inserted for it. */
type RecordedRow = { owned: boolean; task: StoredTask | null };
/** An outcome's answer from FINISH_RUNS: the revision it finished its run at (null: refused), and the run. */
type FinishedRow = { finishedRevision: number | null; finishedWorkflow: string | null } & Partial<RunEntity> & { hasSteps: boolean | null };

/** RECORD_TASKS's $1-$10. */
function recordParams(items: TaskItem[]): unknown[] {
  return [
    items.map(({ runId }) => runId),
    items.map(({ task }) => task.expectedRevision),
    items.map(({ task }) => task.key),
    items.map(({ task }) => task.seq),
    items.map(({ task }) => task.name),
    items.map(({ task }) => task.status),
    items.map(({ task }) => task.attempts),
    items.map(({ task }) => json(task.output)),
    items.map(({ task }) => json(task.error)),
    items.map(({ task }) => task.durationMs ?? null),
  ];
}

/** FINISH_RUNS's six arrays. */
function finishParams(items: OutcomeItem[]): unknown[] {
  return [
    items.map((item) => item.runId),
    items.map((item) => item.expectedRevision),
    items.map((item) => item.outcome.status),
    items.map((item) => (item.outcome.status === 'completed' ? json(item.outcome.output) : null)),
    items.map((item) => (item.outcome.status === 'failed' ? json(item.outcome.error) : null)),
    items.map((item) => item.returnRun ?? false),
  ];
}

/** Each task result's answer: the stored task, the one recorded first for its key (adopted), or why it was refused. */
async function recordedResults(on: SqlExecutor, items: TaskItem[], rows: RecordedRow[]): Promise<(StoredTask | Error)[]> {
  const refused = indexesWhere(rows, (row) => !row.owned);
  // Owned but not inserted: a result for this key was recorded first; adopt it.
  const adopted = indexesWhere(rows, (row) => row.owned && row.task === null);
  const conflicts = await conflictsFor(
    on,
    refused.map((i) => ({ runId: items[i].runId, expectedRevision: items[i].task.expectedRevision })),
  );
  const recorded = await findSteps(
    on,
    adopted.map((i) => ({ runId: items[i].runId, key: items[i].task.key })),
  );
  const results: (StoredTask | Error)[] = rows.map((row) => row.task!);
  for (const [k, i] of refused.entries()) results[i] = conflicts[k];
  for (const [k, i] of adopted.entries()) results[i] = recorded[k]!;
  return results;
}

/** Each outcome's answer: its run finished (with the run, when asked), one that landed before (a resend), or why it was refused. */
async function finishedResults(on: SqlExecutor, items: OutcomeItem[], rows: FinishedRow[]): Promise<(RunFinished | Error)[]> {
  const refused = indexesWhere(rows, (row) => row.finishedRevision === null);
  const results: (RunFinished | Error | undefined)[] = rows.map(({ finishedRevision, finishedWorkflow, hasSteps, ...run }) => {
    if (finishedRevision === null) return undefined;
    return { revision: finishedRevision, workflow: finishedWorkflow!, ...(hasSteps !== null && { run: { run: run as RunEntity, hasSteps } }) };
  });
  // Not a run this batch finished (a second outcome in one batch stays a 409).
  const finishedNow = new Set(rows.flatMap((row, i) => (row.finishedRevision === null ? [] : [items[i].runId])));
  const resent = refused.filter((i) => !finishedNow.has(items[i].runId));
  const landed = await landedBefore(
    on,
    resent.map((i) => items[i]),
  );
  for (const [k, i] of resent.entries()) results[i] = landed[k];
  const stillRefused = refused.filter((i) => results[i] === undefined);
  const conflicts = await conflictsFor(
    on,
    stillRefused.map((i) => items[i]),
  );
  for (const [k, i] of stillRefused.entries()) results[i] = conflicts[k];
  return results as (RunFinished | Error)[];
}

/** Positions of the rows matching `test`. */
function indexesWhere<T>(rows: T[], test: (row: T) => boolean): number[] {
  return rows.flatMap((row, index) => (test(row) ? [index] : []));
}

/**
 * Outcomes that landed already: a worker sends one again when the answer to the first was lost (its
 * connection died at COMMIT, which PostgreSQL may still have made durable). The first moved the run to
 * `expectedRevision + 1` with this very status and output (or error), which nothing else can do (every
 * write at that revision is fenced to its one holder), so the resend is answered as the first was
 * instead of with a 409 that would make the worker give the run up. A different outcome stays a 409.
 */
async function landedBefore(
  on: SqlExecutor,
  items: { runId: string; expectedRevision: number; outcome: RunOutcome }[],
): Promise<({ revision: number; workflow: string } | undefined)[]> {
  if (items.length === 0) return [];
  const rows = await on.query<{ n: string; revision: number; workflow: string }>(
    `SELECT i.n, r.revision, r.workflow
       FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::jsonb[], $5::jsonb[]) WITH ORDINALITY AS i(run_id, revision, status, output, error, n)
       JOIN runs r ON r.id = i.run_id AND r.revision = i.revision + 1 AND r.status = i.status
      WHERE CASE WHEN i.status = 'completed' THEN r.output IS NOT DISTINCT FROM i.output ELSE r.error IS NOT DISTINCT FROM i.error END`,
    [
      items.map((item) => item.runId),
      items.map((item) => item.expectedRevision),
      items.map((item) => item.outcome.status),
      items.map((item) => (item.outcome.status === 'completed' ? json(item.outcome.output) : null)),
      items.map((item) => (item.outcome.status === 'failed' ? json(item.outcome.error) : null)),
    ],
  );
  const byPosition = new Map(rows.map(({ n, revision, workflow }) => [Number(n), { revision, workflow }]));
  return items.map((_, index) => byPosition.get(index + 1));
}
