import { DatabaseUnavailableError, DurableError, StoredTask } from '@nest-durable/common';
import {
  type FinishedRow,
  findLandedOutcomes,
  findSteps,
  type OutcomeReport,
  type RecordedRow,
  type RunEntity,
  type SqlExecutor,
  type TaskReport,
} from '@app/persistence';
import { conflictsFor } from '../runs/conflicts';

/*
 * The answers to a worker's reports, from the rows their statement returned: each report's result, or why it was
 * refused. A refused report needs a read (whether its run exists; the result recorded first for its key; whether
 * an outcome landed before), on the executor the statement ran on.
 */

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
export async function answering<T>(committed: boolean, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!committed || error instanceof DatabaseUnavailableError || !(error instanceof Error)) throw error;
    throw new ReportAnswerError(error);
  }
}

/** Each task result's answer: the stored task, the one recorded first for its key (adopted), or why it was refused. */
export async function recordedResults(on: SqlExecutor, items: TaskReport[], rows: RecordedRow[]): Promise<(StoredTask | Error)[]> {
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

/**
 * Each outcome's answer: its run finished (with the run, when asked), one that landed before (a resend whose first
 * answer was lost: answered as the first was, instead of with a 409 that would make the worker give the run up),
 * or why it was refused.
 */
export async function finishedResults(on: SqlExecutor, items: OutcomeReport[], rows: FinishedRow[]): Promise<(RunFinished | Error)[]> {
  const refused = indexesWhere(rows, (row) => row.finishedRevision === null);
  const results: (RunFinished | Error | undefined)[] = rows.map(({ finishedRevision, finishedWorkflow, hasSteps, ...run }) => {
    if (finishedRevision === null) return undefined;
    return { revision: finishedRevision, workflow: finishedWorkflow!, ...(hasSteps !== null && { run: { run: run as RunEntity, hasSteps } }) };
  });
  // Not a run this batch finished (a second outcome in one batch stays a 409).
  const finishedNow = new Set(rows.flatMap((row, i) => (row.finishedRevision === null ? [] : [items[i].runId])));
  const resent = refused.filter((i) => !finishedNow.has(items[i].runId));
  const landed = await findLandedOutcomes(
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
