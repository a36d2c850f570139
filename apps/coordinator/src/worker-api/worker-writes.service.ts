import {
  CompleteRunRequest,
  EngineError,
  FailRunRequest,
  ReportOutcome,
  StoredTask,
  TaskResultRequest,
  WorkerReport,
} from '@app/contracts';
import { RunLeaseRepository } from '@app/locking';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable, Logger } from '@nestjs/common';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

type Finished = { status: 'completed' | 'failed'; workflow: string } | undefined;

/** Transactions one batch of reports is spread over, and the fewest reports worth a transaction of their own. */
const REPORT_TRANSACTIONS = 4;
const MIN_GROUP = 8;

/** A stable group for a run, so all its reports land in the same transaction, in order. */
function groupOf(runId: string, groups: number): number {
  let hash = 0;
  for (let i = 0; i < runId.length; i++) hash = (hash * 31 + runId.charCodeAt(i)) >>> 0;
  return hash % groups;
}

/**
 * A worker's writes under its claims (task results, completions, failures), alone or coalesced:
 * a batch of reports runs in one transaction, one commit for all of them. Each report is
 * revision-checked on its own, so a stale one is refused without affecting the others.
 */
@Injectable()
export class WorkerWritesService {
  private readonly logger = new Logger(WorkerWritesService.name);

  constructor(
    private readonly leases: RunLeaseRepository,
    private readonly db: Database,
    private readonly metrics: CoordinatorMetrics,
  ) {}

  recordTask(runId: string, task: TaskResultRequest): Promise<StoredTask> {
    return this.leases.recordTask(runId, task);
  }

  async complete(runId: string, request: CompleteRunRequest): Promise<{ revision: number }> {
    const { result, finished } = await this.completeOn(this.db, runId, request);
    this.count(finished);
    return result;
  }

  async fail(runId: string, request: FailRunRequest): Promise<{ revision: number }> {
    const { result, finished } = await this.failOn(this.db, runId, request);
    this.count(finished);
    return result;
  }

  /**
   * Applies reports in a few transactions run side by side (the reports of one run always in the
   * same one, in order): one commit per group instead of per report, without running every
   * statement of a large batch one after another on a single connection. A report refused by its
   * revision check (or as not found) gets its error outcome and the others still apply. If the
   * database rejects a statement (which aborts its transaction), that group's reports are applied
   * one by one instead, so only the bad one fails.
   */
  async apply(reports: WorkerReport[]): Promise<ReportOutcome[]> {
    const groups = new Map<number, number[]>();
    reports.forEach((report, index) => {
      const group = groupOf(report.runId, Math.min(REPORT_TRANSACTIONS, Math.ceil(reports.length / MIN_GROUP)));
      groups.set(group, [...(groups.get(group) ?? []), index]);
    });
    const applied = new Array<{ outcome: ReportOutcome; finished: Finished }>(reports.length);
    await Promise.all(
      [...groups.values()].map(async (indexes) => {
        const results = await this.applyGroup(indexes.map((index) => reports[index]));
        indexes.forEach((index, i) => (applied[index] = results[i]));
      }),
    );
    for (const { finished } of applied) this.count(finished);
    return applied.map(({ outcome }) => outcome);
  }

  private async applyGroup(reports: WorkerReport[]): Promise<{ outcome: ReportOutcome; finished: Finished }[]> {
    // A lone report is one statement: it commits on its own without BEGIN/COMMIT round trips.
    if (reports.length === 1) return [await this.applyOne(this.db, reports[0], true)];
    try {
      return await this.db.transaction(async (tx) => {
        const results: { outcome: ReportOutcome; finished: Finished }[] = [];
        for (const report of reports) results.push(await this.applyOne(tx, report, false));
        return results;
      });
    } catch (error) {
      this.logger.warn('a group of reports failed as a whole; applying them one by one', { error: (error as Error).message });
      const results: { outcome: ReportOutcome; finished: Finished }[] = [];
      for (const report of reports) results.push(await this.applyOne(this.db, report, true));
      return results;
    }
  }

  private async applyOne(on: SqlExecutor, report: WorkerReport, isolate: boolean): Promise<{ outcome: ReportOutcome; finished: Finished }> {
    try {
      switch (report.type) {
        case 'task':
          return { outcome: { ok: true, result: await this.leases.recordTask(report.runId, report.task, on) }, finished: undefined };
        case 'complete': {
          const { result, finished } = await this.completeOn(on, report.runId, report.complete);
          return { outcome: { ok: true, result }, finished };
        }
        case 'fail': {
          const { result, finished } = await this.failOn(on, report.runId, report.fail);
          return { outcome: { ok: true, result }, finished };
        }
      }
    } catch (error) {
      if (error instanceof EngineError) {
        return { outcome: { ok: false, statusCode: error.statusCode, reason: error.reason, message: error.message }, finished: undefined };
      }
      if (!isolate) throw error;
      this.logger.error('a report could not be applied', { runId: report.runId, error: (error as Error).message });
      return { outcome: { ok: false, statusCode: 500, reason: 'internal_error', message: 'internal error; see the coordinator log' }, finished: undefined };
    }
  }

  private async completeOn(on: SqlExecutor, runId: string, request: CompleteRunRequest) {
    const { revision, workflow } = await this.leases.finish(runId, request.expectedRevision, { status: 'completed', output: request.output }, on);
    return { result: { revision }, finished: { status: 'completed' as const, workflow } };
  }

  /** Fails the run, or with `retryDelayMs` schedules its next attempt (workflow-level retry). */
  private async failOn(on: SqlExecutor, runId: string, request: FailRunRequest) {
    if (request.retryDelayMs !== undefined) {
      return { result: await this.leases.retryLater(runId, request.expectedRevision, request.error, request.retryDelayMs, on), finished: undefined };
    }
    const { revision, workflow } = await this.leases.finish(runId, request.expectedRevision, { status: 'failed', error: request.error }, on);
    return { result: { revision }, finished: { status: 'failed' as const, workflow } };
  }

  private count(finished: Finished): void {
    if (finished?.status === 'completed') this.metrics.runsCompleted.inc({ workflow: finished.workflow });
    if (finished?.status === 'failed') this.metrics.runsFailed.inc({ workflow: finished.workflow });
  }
}
