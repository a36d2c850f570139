import type { RunValuesRequest, TaskResultRequest, WorkerReport } from '@nest-durable/common';
import type { RunOutcome } from '@app/run-store';

/**
 * A batch of reports sorted into its statements: all exposed values and progress in one, all task results in
 * another, all completions and failures in a third, each workflow-level retry in its own. When each outcome is at a run and revision one of the task
 * results is at (a batch of runs' last task results with their outcomes), `tasksLockAll`: the task results'
 * statement locks every run an outcome needs, and the two run as one statement. A batch that is one statement
 * (`oneStatement`: those, or task results alone, or values alone) needs no transaction: it commits on its own.
 * Values with anything else take a transaction: they are the rarer report (a run's values when they changed, its
 * progress at most once per interval), and their statement runs first, before the outcomes that move runs on.
 */
export interface BatchPlan {
  reports: WorkerReport[];
  tasks: { index: number; runId: string; task: TaskResultRequest }[];
  values: { index: number; runId: string; values: RunValuesRequest }[];
  finals: { index: number; runId: string; expectedRevision: number; outcome: RunOutcome }[];
  tasksLockAll: boolean;
  /** How many statements the batch is: more than one locks its runs first, in id order. */
  statements: number;
  oneStatement: boolean;
}

export function planBatch(reports: WorkerReport[]): BatchPlan {
  const tasks = reports.flatMap((report, index) => (report.type === 'task' ? [{ index, runId: report.runId, task: report.task }] : []));
  const finals = reports.flatMap((report, index): BatchPlan['finals'] => {
    if (report.type === 'complete') {
      return [
        { index, runId: report.runId, expectedRevision: report.complete.expectedRevision, outcome: { status: 'completed', output: report.complete.output } },
      ];
    }
    if (report.type === 'fail' && report.fail.retryDelayMs === undefined) {
      return [{ index, runId: report.runId, expectedRevision: report.fail.expectedRevision, outcome: { status: 'failed', error: report.fail.error } }];
    }
    return [];
  });
  const values = reports.flatMap((report, index) => (report.type === 'values' ? [{ index, runId: report.runId, values: report.values }] : []));
  const retries = reports.length - tasks.length - finals.length - values.length;
  // Each outcome's run has task results here at the outcome's revision, and at no other (an older execution's,
  // refused, would refuse the outcome in two statements, not in one).
  const taskRevisions = new Map<string, Set<number>>();
  for (const { runId, task } of tasks) taskRevisions.set(runId, (taskRevisions.get(runId) ?? new Set()).add(task.expectedRevision));
  const tasksLockAll =
    tasks.length > 0 &&
    retries === 0 &&
    values.length === 0 &&
    finals.every((final) => {
      const revisions = taskRevisions.get(final.runId);
      return revisions?.size === 1 && revisions.has(final.expectedRevision);
    });
  const statements = tasksLockAll ? 1 : Number(tasks.length > 0) + Number(finals.length > 0) + Number(values.length > 0) + retries;
  // Outcomes alone stay in a transaction: it runs them with their generic plan (Database.transaction), as before.
  return { reports, tasks, values, finals, tasksLockAll, statements, oneStatement: statements === 1 && (tasks.length > 0 || values.length > 0) };
}

/** Whether the report ends its run if it applies: a completion, or a failure without a retry. */
export function endsRun(report: WorkerReport): boolean {
  return report.type === 'complete' || (report.type === 'fail' && report.fail.retryDelayMs === undefined);
}
