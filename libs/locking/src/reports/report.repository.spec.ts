import { describe, expect, it } from '@jest/globals';
import { DatabaseUnavailableError, type TaskResultRequest } from '@nest-durable/client';
import type { Database, SqlExecutor } from '@app/persistence';
import { ReportAnswerError, ReportRepository } from './report.repository';

const RUN = '01a23292-e466-76ce-9ad8-c86c6dd448fb';
const task: TaskResultRequest = { expectedRevision: 3, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1, error: null };

/** A database whose report statement answers `rows` (a stale result: refused, so a read of its conflict follows), and whose next read throws `error`. */
function database(rows: object[], error: Error): SqlExecutor {
  let statements = 0;
  return {
    query: async () => {
      statements++;
      if (statements === 1) return rows as never[];
      throw error;
    },
  };
}

describe('ReportRepository: a read answering a report statement that ran', () => {
  const repository = new ReportRepository({} as Database);

  it('fails as a ReportAnswerError: the statement ran (and, on its own, committed)', async () => {
    const on = database([{ owned: false, task: null }], new Error('canceling statement due to statement timeout'));
    await expect(repository.recordTasks([{ runId: RUN, task }], 9_000, on)).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('with the task results and outcomes in one statement too', async () => {
    const on = database(
      [{ finishedRevision: null, finishedWorkflow: null, hasSteps: null, recorded: [{ owned: false, task: null }] }],
      new Error('canceling statement due to statement timeout'),
    );
    const finishing = [{ runId: RUN, expectedRevision: 3, outcome: { status: 'completed' as const, output: 1 } }];
    await expect(repository.recordTasksAndFinish([{ runId: RUN, task }], finishing, 9_000, on)).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('but an unavailable database stays itself (a 503, which the worker resends)', async () => {
    const on = database([{ owned: false, task: null }], new DatabaseUnavailableError('connection terminated'));
    await expect(repository.recordTasks([{ runId: RUN, task }], 9_000, on)).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });
});
