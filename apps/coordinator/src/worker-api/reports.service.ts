import { CompleteRunRequest, DatabaseUnavailableError, FailRunRequest, ReportOutcome, StoredTask, TaskResultRequest, WorkerReport } from '@nest-durable/common';
import { ReportAnswerError, ReportRepository, type RunFinished, type RunOutcome } from '@app/run-store';
import { Database, type SqlExecutor } from '@app/persistence';
import { heartbeatRefreshAfterMs } from '@app/locking';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import type { Finishing } from '../hand-off/result-waits.service';
import { type EndedRun, RunLifecycle } from '../hand-off/run-lifecycle.service';
import { type BatchPlan, endsRun, planBatch } from './report-batch';
import { refusalOf } from '../http/error-statuses';

/** The run a report ended, if it did. */
type Finished = EndedRun | undefined;

/**
 * A worker's reports under its claims: task results, exposed values and progress, completions and failures, alone or coalesced (a batch
 * of reports runs in one transaction, one commit for all of them). Each is revision-checked on its own, so a
 * stale one is refused (409) without affecting the others. The runs they end are told to RunLifecycle.
 */
@Injectable()
export class ReportsService {
  private readonly logger = new Logger(ReportsService.name);
  /** A task result refreshes a claim last refreshed longer ago than this (see ReportRepository.recordTasks). */
  private readonly refreshAfterMs: number;

  constructor(
    private readonly reports: ReportRepository,
    private readonly db: Database,
    private readonly lifecycle: RunLifecycle,
    @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig,
  ) {
    this.refreshAfterMs = heartbeatRefreshAfterMs(config.claimMinIdleTimeMs);
  }

  recordTask(runId: string, task: TaskResultRequest): Promise<StoredTask> {
    return this.reports.recordTask(runId, task, this.refreshAfterMs);
  }

  complete(runId: string, request: CompleteRunRequest): Promise<{ revision: number }> {
    return this.applyAlone({ type: 'complete', runId, complete: request }, (finishing) => this.completeOn(this.db, runId, request, finishing));
  }

  fail(runId: string, request: FailRunRequest): Promise<{ revision: number }> {
    return this.applyAlone({ type: 'fail', runId, fail: request }, (finishing) => this.failOn(this.db, runId, request, finishing));
  }

  /** An outcome report sent on its own (not in a batch): written, then its end handed over, under its Finishing mark. */
  private async applyAlone(
    report: WorkerReport,
    write: (finishing: Finishing) => Promise<{ result: { revision: number }; finished: Finished }>,
  ): Promise<{ revision: number }> {
    const finishing = this.lifecycle.finishing(endsRun(report) ? [report.runId] : []);
    try {
      const { result, finished } = await write(finishing);
      if (finished) this.lifecycle.finished(finished, finishing);
      return result;
    } finally {
      finishing.end();
    }
  }

  /**
   * Applies reports in one transaction and a handful of statements: all task results in one
   * statement, then all completions and failures in another (a run's task results always come before
   * its outcome), then each workflow-level retry. With more than one statement, the batch's runs are
   * locked first, in id order, the one lock order of every writer. Each report is checked against
   * its own run, so a stale one is refused (409) without affecting the others. If the database rejects a statement
   * (which aborts the transaction), the reports are applied one by one instead, so only the bad one
   * fails. If the database cannot be reached, the request fails as a whole (503), and the worker
   * sends it again; so it does (a 500) when a statement that committed on its own could not be answered
   * (ReportAnswerError): applied again, its reports would be refused as stale.
   */
  async apply(reports: WorkerReport[]): Promise<ReportOutcome[]> {
    const awaited = new Set<string>();
    const finishing = this.lifecycle.finishing(reports.filter(endsRun).map((report) => report.runId));
    let applied: { outcome: ReportOutcome; finished: Finished }[];
    try {
      // A lone report, or a batch that is one statement (see BatchPlan), commits on its own, without BEGIN and
      // COMMIT round trips.
      const plan = planBatch(reports);
      applied =
        reports.length === 1
          ? await this.applyEach(reports, finishing)
          : await (plan.oneStatement
              ? this.applyTogether(this.db, plan, finishing)
              : this.db.transaction((tx) => this.applyTogether(tx, plan, finishing), { genericPlan: true })
            ).catch((error: Error) => {
              if (error instanceof DatabaseUnavailableError) throw error;
              // The one statement committed, and only reading its answer failed: applied again one by one, its
              // reports would be refused as stale. The request fails instead (a 500), and the worker's resend is
              // answered from what they wrote (an outcome as landed before, a task result alone as adopted).
              if (error instanceof ReportAnswerError) throw error;
              this.logger.warn('a report batch failed as a whole; applying its reports one by one', { error: error.message });
              return this.applyEach(reports, finishing);
            });
      // Told of each run that ended, RunLifecycle hands it to the waits for its result here: those it ended count.
      for (const { finished } of applied) if (finished && this.lifecycle.finished(finished, finishing) > 0) awaited.add(finished.runId);
    } finally {
      finishing.end();
    }
    // When every report here is of a run that ended and a client waits for, that client is on the run's way to
    // its end and the worker is not: let the result go first. (Reports of other runs would wait with it, and a
    // worker's next step waits for its task results: those answers are not delayed.)
    if (awaited.size > 0 && reports.every((report) => awaited.has(report.runId))) await nextTurn();
    return applied.map(({ outcome }) => outcome);
  }

  /** Each report in a statement (and commit) of its own; a run's reports after one of its refused are refused with it. */
  private async applyEach(reports: WorkerReport[], finishing: Finishing): Promise<{ outcome: ReportOutcome; finished: Finished }[]> {
    const applied: { outcome: ReportOutcome; finished: Finished }[] = [];
    const refused = new Map<string, ReportOutcome>();
    for (const report of reports) {
      const earlier = refused.get(report.runId);
      const one = earlier ? { outcome: earlier, finished: undefined } : await this.applyOne(this.db, report, finishing);
      if (!one.outcome.ok) refused.set(report.runId, one.outcome);
      applied.push(one);
    }
    return applied;
  }

  private async applyTogether(tx: SqlExecutor, plan: BatchPlan, finishing: Finishing): Promise<{ outcome: ReportOutcome; finished: Finished }[]> {
    const { reports, tasks, values, finals, tasksLockAll } = plan;
    const applied = new Array<{ outcome: ReportOutcome; finished: Finished }>(reports.length);
    const runs = [...new Set(reports.map((report) => report.runId))];
    if (runs.length > 1 && plan.statements > 1) {
      // Several statements, each locking its own subset of the runs: lock them all first, in id order.
      // (One run's reports need no order: a run's last task result and its outcome, say.)
      await this.reports.lockInOrder(runs, tx);
    }
    if (finals.length > 0 && tasksLockAll) {
      // One statement for both (see BatchPlan).
      const ending = finals.map((final) => ({ ...final, returnRun: finishing.returnsRun(final.runId, final.outcome.status === 'completed') }));
      const results = await this.reports.recordTasksAndFinish(tasks, ending, this.refreshAfterMs, tx);
      for (const [i, { index }] of tasks.entries()) applied[index] = { outcome: toOutcome(results.tasks[i]), finished: undefined };
      for (const [i, final] of ending.entries()) applied[final.index] = this.finishedOutcome(final, results.outcomes[i]);
      return applied;
    }
    // A run's outcome depends on its task results before it (the worker sends its last ones together
    // with it, see RunSteps.unsettle in the worker): one of them refused, the outcome is refused with it.
    const refused = new Map<string, ReportOutcome>();
    if (values.length > 0) {
      // First: values do not move a run on, and the outcomes after them do (a run's values land before its end).
      const results = await this.reports.recordValues(values, tx);
      values.forEach(({ index, runId }, i) => {
        const outcome = toOutcome(results[i]);
        applied[index] = { outcome, finished: undefined };
        if (!outcome.ok && !refused.has(runId)) refused.set(runId, outcome);
      });
    }
    if (tasks.length > 0) {
      const results = await this.reports.recordTasks(
        tasks,
        this.refreshAfterMs,
        tx,
        finals.map((final) => final.runId),
      );
      tasks.forEach(({ index, runId }, i) => {
        const outcome = toOutcome(results[i]);
        applied[index] = { outcome, finished: undefined };
        if (!outcome.ok && !refused.has(runId)) refused.set(runId, outcome);
      });
    }
    for (const { index, runId } of finals) {
      const earlier = refused.get(runId);
      if (earlier) applied[index] = { outcome: earlier, finished: undefined };
    }
    const ending = finals
      .filter(({ runId }) => !refused.has(runId))
      .map((final) => ({ ...final, returnRun: finishing.returnsRun(final.runId, final.outcome.status === 'completed') }));
    if (ending.length > 0) {
      const results = await this.reports.finishMany(ending, tx);
      for (const [i, final] of ending.entries()) applied[final.index] = this.finishedOutcome(final, results[i]);
    }
    for (const [index, report] of reports.entries()) {
      if (applied[index]) continue;
      const earlier = refused.get(report.runId);
      applied[index] = earlier ? { outcome: earlier, finished: undefined } : await this.applyOne(tx, report, finishing);
    }
    return applied;
  }

  /** An outcome's answer, and the run it ended. */
  private finishedOutcome(final: { runId: string; outcome: RunOutcome }, result: RunFinished | Error): { outcome: ReportOutcome; finished: Finished } {
    if (result instanceof Error) return { outcome: toOutcome(result), finished: undefined };
    return {
      outcome: { ok: true, result: { revision: result.revision } },
      finished: { runId: final.runId, status: final.outcome.status, workflow: result.workflow, run: result.run },
    };
  }

  /**
   * One report on its own; its refusals (refusalOf) become its outcome. An unavailable
   * database is no answer about this report: it fails the request, which the worker retries.
   */
  private async applyOne(on: SqlExecutor, report: WorkerReport, finishing: Finishing): Promise<{ outcome: ReportOutcome; finished: Finished }> {
    try {
      switch (report.type) {
        case 'task':
          return { outcome: { ok: true, result: await this.reports.recordTask(report.runId, report.task, this.refreshAfterMs, on) }, finished: undefined };
        case 'complete': {
          const { result, finished } = await this.completeOn(on, report.runId, report.complete, finishing);
          return { outcome: { ok: true, result }, finished };
        }
        case 'fail': {
          const { result, finished } = await this.failOn(on, report.runId, report.fail, finishing);
          return { outcome: { ok: true, result }, finished };
        }
        case 'values': {
          const [result] = await this.reports.recordValues([{ runId: report.runId, values: report.values }], on);
          if (result instanceof Error) throw result;
          return { outcome: { ok: true, result }, finished: undefined };
        }
      }
    } catch (error) {
      // A report that landed, but whose answer could not be read, is no answer either (see apply).
      if (error instanceof DatabaseUnavailableError || error instanceof ReportAnswerError) throw error;
      const refusal = refusalOf(error);
      if (refusal) return { outcome: { ok: false, ...refusal }, finished: undefined };
      if (on !== this.db) throw error;
      this.logger.error('a report could not be applied', { runId: report.runId, error: (error as Error).message });
      return { outcome: { ok: false, statusCode: 500, reason: 'internal_error', message: 'internal error; see the coordinator log' }, finished: undefined };
    }
  }

  private completeOn(on: SqlExecutor, runId: string, request: CompleteRunRequest, finishing: Finishing) {
    return this.finishOn(on, runId, request.expectedRevision, { status: 'completed', output: request.output }, finishing);
  }

  /** Fails the run, or with `retryDelayMs` schedules its next attempt (workflow-level retry). */
  private async failOn(on: SqlExecutor, runId: string, request: FailRunRequest, finishing: Finishing) {
    if (request.retryDelayMs !== undefined) {
      return { result: await this.reports.retryLater(runId, request.expectedRevision, request.error, request.retryDelayMs, on), finished: undefined };
    }
    return this.finishOn(on, runId, request.expectedRevision, { status: 'failed', error: request.error }, finishing);
  }

  private async finishOn(on: SqlExecutor, runId: string, expectedRevision: number, outcome: RunOutcome, finishing: Finishing) {
    const { revision, workflow, run } = await this.reports.finish(
      runId,
      expectedRevision,
      outcome,
      on,
      finishing.returnsRun(runId, outcome.status === 'completed'),
    );
    return { result: { revision }, finished: { runId, status: outcome.status, workflow, run } satisfies Finished };
  }
}

function toOutcome(result: StoredTask | { revision: number } | Error): ReportOutcome {
  if (!(result instanceof Error)) return { ok: true, result };
  const refusal = refusalOf(result);
  if (!refusal) throw result;
  return { ok: false, ...refusal };
}
