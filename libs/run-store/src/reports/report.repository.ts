import { ErrorDetails, RunValuesRequest, StoredTask, TaskResultRequest } from '@nest-durable/common';
import {
  Database,
  finishRuns,
  lockRunsInOrder,
  type OutcomeReport,
  recordTaskResults,
  recordRunValues,
  recordTaskResultsAndFinishRuns,
  releaseRun,
  retryRunLater,
  type RunOutcome,
  type SqlExecutor,
  type ValuesReport,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor, conflictsFor, unwrap } from '../runs/conflicts';
import { answering, finishedResults, type RunFinished, recordedResults } from './report-answers';

export type { RunOutcome } from '@app/persistence';

/**
 * What a worker reports under its claim: task results and the run's outcome (finish, retry later,
 * release). Each write is revision-checked in the statement that makes it (reports.sql.ts in the SQL
 * home), so a worker that lost its claim (taken over after going idle, or the run was cancelled) can
 * change nothing; a write refused so answers with a 409 (stale) or a 404 (no such run).
 */
@Injectable()
export class ReportRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records a task result under the claim. The first result recorded for a key wins; a later writer gets
   * the stored one back and adopts it, so each task has exactly one recorded result. Writing a result also
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
   * A result refreshes its run's claim only once the last refresh is older than `refreshAfterMs` (the
   * coordinator passes a tenth of the claim idle time; see recordTaskResults for why not on every one).
   */
  async recordTasks(
    items: { runId: string; task: TaskResultRequest }[],
    refreshAfterMs: number,
    on: SqlExecutor = this.db,
    finishing: string[] = [],
  ): Promise<(StoredTask | Error)[]> {
    const rows = await recordTaskResults(on, items, { finishing, refreshAfterMs });
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
    outcomes: OutcomeReport[],
    refreshAfterMs: number,
    on: SqlExecutor = this.db,
  ): Promise<{ tasks: (StoredTask | Error)[]; outcomes: (RunFinished | Error)[] }> {
    const rows = await recordTaskResultsAndFinishRuns(on, tasks, outcomes, refreshAfterMs);
    return answering(on === this.db, async () => ({
      tasks: await recordedResults(on, tasks, rows[0].recorded ?? []),
      outcomes: await finishedResults(on, outcomes, rows),
    }));
  }

  /**
   * Records runs' exposed values and progress under their claims, in one statement (recordRunValues). A worker may
   * send several reports of one run in one batch (a progress flushed while the one before was in flight): they are
   * merged first, the later value of a name or progress winning, as if applied one after another. Each report
   * comes back as the run's revision (unchanged: values do not move a run on) or the error (409 stale, 404 unknown).
   */
  async recordValues(items: { runId: string; values: RunValuesRequest }[], on: SqlExecutor = this.db): Promise<({ revision: number } | Error)[]> {
    const merged = new Map<string, ValuesReport>();
    const slots = items.map(({ runId, values }) => {
      const slot = `${runId} ${values.expectedRevision}`;
      const report = merged.get(slot) ?? { runId, expectedRevision: values.expectedRevision, exposed: {} };
      Object.assign(report.exposed, values.exposed);
      if (values.progress !== undefined) report.progress = { value: values.progress };
      merged.set(slot, report);
      return slot;
    });
    const reports = [...merged.values()];
    const recorded = await recordRunValues(on, reports);
    const refused = reports.filter((_, i) => !recorded[i]);
    const errors = new Map<ValuesReport, Error>();
    const conflicts = await answering(on === this.db, () => conflictsFor(on, refused));
    for (const [i, report] of refused.entries()) errors.set(report, conflicts[i]);
    return slots.map((slot, i) => {
      const report = merged.get(slot)!;
      return errors.get(report) ?? { revision: items[i].values.expectedRevision };
    });
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
  async finishMany(items: OutcomeReport[], on: SqlExecutor = this.db): Promise<(RunFinished | Error)[]> {
    const rows = await finishRuns(on, items);
    return answering(on === this.db, () => finishedResults(on, items, rows));
  }

  /**
   * Workflow-level retry: instead of failing, the run waits `delayMs` and then runs again as
   * attempt + 1. Completed steps are kept (it resumes from its checkpoints); failed ones and retry
   * waits are removed so they run again.
   */
  async retryLater(runId: string, expectedRevision: number, error: ErrorDetails, delayMs: number, on: SqlExecutor = this.db): Promise<{ revision: number }> {
    const row = await retryRunLater(on, { runId, expectedRevision, error, delayMs });
    if (!row) throw await conflictFor(on, runId, expectedRevision);
    return { revision: row.revision };
  }

  /** Gives a running run back (worker shutting down): queued and due now, for any worker to take at once. */
  async release(runId: string, expectedRevision: number, on: SqlExecutor = this.db): Promise<{ revision: number }> {
    const row = await releaseRun(on, runId, expectedRevision);
    if (!row) throw await conflictFor(on, runId, expectedRevision);
    return { revision: row.revision };
  }

  /**
   * Locks the given runs in id order, for a transaction about to change them in several
   * statements (see lockRunsInOrder for why).
   */
  async lockInOrder(runIds: string[], on: SqlExecutor): Promise<void> {
    await lockRunsInOrder(on, runIds);
  }
}
