import { describe, expect, it } from '@jest/globals';
import { DatabaseUnavailableError, type TaskResultRequest } from '@nest-durable/common';
import type { Database, SqlExecutor } from '@app/persistence';
import { ReportAnswerError } from './report-answers';
import { ReportRepository } from './report.repository';

const RUN = '01a23292-e466-76ce-9ad8-c86c6dd448fb';
const task: TaskResultRequest = { expectedRevision: 3, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1, error: null };
const outcome = { runId: RUN, expectedRevision: 3, outcome: { status: 'completed' as const, output: 1 } };
/** A task result refused (stale), an outcome refused: each answer needs a read after the statement. */
const REFUSED_TASK = { owned: false, task: null };
const REFUSED_OUTCOME = { finishedRevision: null, finishedWorkflow: null, hasSteps: null };
const TIMEOUT = new Error('canceling statement due to statement timeout');

/** An executor whose first statement (the report's) answers `rows`, and whose next one (a read answering it) throws `error`. */
function executor(rows: object[], error: Error): SqlExecutor {
  let statements = 0;
  return {
    query: async () => {
      statements++;
      if (statements === 1) return rows as never[];
      throw error;
    },
  };
}

/** A repository whose database is `db`: a statement on it commits on its own. */
const repository = (db: SqlExecutor) => new ReportRepository(db as unknown as Database);

describe('ReportRepository: a read answering a report statement that committed on its own', () => {
  it('fails as a ReportAnswerError: its reports landed', async () => {
    await expect(repository(executor([REFUSED_TASK], TIMEOUT)).recordTasks([{ runId: RUN, task }], 9_000)).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('with the task results and outcomes in one statement too', async () => {
    const db = executor([{ ...REFUSED_OUTCOME, recorded: [REFUSED_TASK] }], TIMEOUT);
    await expect(repository(db).recordTasksAndFinish([{ runId: RUN, task }], [outcome], 9_000)).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('and with outcomes alone (a lone completion, whose resend is read as landed before)', async () => {
    await expect(repository(executor([REFUSED_OUTCOME], TIMEOUT)).finishMany([outcome])).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('but an unavailable database stays itself (a 503, which the worker resends)', async () => {
    const db = executor([REFUSED_TASK], new DatabaseUnavailableError('connection terminated'));
    await expect(repository(db).recordTasks([{ runId: RUN, task }], 9_000)).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });

  it('in a transaction the failure stays itself: it rolls the statement back (nothing landed)', async () => {
    const tx = executor([REFUSED_TASK], TIMEOUT);
    await expect(repository({ query: async () => [] }).recordTasks([{ runId: RUN, task }], 9_000, tx)).rejects.toBe(TIMEOUT);
  });
});
