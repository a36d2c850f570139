import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JsonValue, TaskResultRequest } from '@nest-durable/common';
import { createSqlTestDatabase, holdTransaction, newRun, type SqlTestDatabase, startClaimed } from '../../../../test/support/sql-database';
import { recordTaskResultsAndFinishRuns } from './report-batch.sql';

/** A completed task result at `key` under the claim at `expectedRevision`. */
const result = (key: string, expectedRevision: number, output: JsonValue = key): TaskResultRequest => ({
  expectedRevision,
  key,
  seq: 0,
  name: key,
  status: 'completed',
  attempts: 1,
  output,
  error: null,
});

describe("a batch of runs' last task results with their outcomes, in one statement (recordTaskResultsAndFinishRuns)", () => {
  let database: SqlTestDatabase;

  beforeAll(async () => {
    database = await createSqlTestDatabase('report_batch_sql');
  });

  afterAll(async () => {
    await database?.close();
  });

  it("records the task results and ends their runs: the outcomes' rows, the first with every task result's answer", async () => {
    const [a, b] = [newRun('batch'), newRun('batch-b')];
    await startClaimed(database.db, a, 'worker-a', 'build-a');
    await startClaimed(database.db, b);

    const rows = await recordTaskResultsAndFinishRuns(
      database.db,
      [
        { runId: a.id, task: result('last#1', 1) },
        { runId: b.id, task: result('last#1', 1) },
      ],
      [
        { runId: a.id, expectedRevision: 1, outcome: { status: 'completed', output: 'a' }, returnRun: true },
        { runId: b.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'b' } } },
      ],
      60_000,
    );

    expect(rows.map((row) => [row.finishedRevision, row.finishedWorkflow])).toEqual([
      [2, 'batch'],
      [2, 'batch-b'],
    ]);
    // The run it returns counts the step this very statement inserted.
    expect(rows[0]).toMatchObject({ id: a.id, status: 'completed', output: 'a', buildId: 'build-a', hasSteps: true });
    expect(rows[0].recorded?.map((answer) => [answer.owned, answer.task?.key])).toEqual([
      [true, 'last#1'],
      [true, 'last#1'],
    ]);
    expect(rows[1].recorded).toBeNull();
    expect(await database.sql(`SELECT status, revision FROM runs WHERE id = ANY($1::uuid[]) ORDER BY status`, [[a.id, b.id]])).toEqual([
      { status: 'completed', revision: 2 },
      { status: 'failed', revision: 2 },
    ]);
  });

  it('records a patch marker with the outcome it travels with as a step of kind patch', async () => {
    const run = newRun('batch-marker');
    await startClaimed(database.db, run);
    const marker: TaskResultRequest = {
      expectedRevision: 1,
      key: 'patch:fee#1',
      seq: 0,
      name: 'fee',
      kind: 'patch',
      status: 'completed',
      attempts: 1,
      output: null,
      error: null,
    };

    const [row] = await recordTaskResultsAndFinishRuns(
      database.db,
      [{ runId: run.id, task: marker }],
      [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 'done' } }],
      60_000,
    );

    expect(row).toMatchObject({ finishedRevision: 2, recorded: [{ owned: true, task: { key: 'patch:fee#1', kind: 'patch' } }] });
    expect(await database.sql(`SELECT kind, name FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ kind: 'patch', name: 'fee' }]);
  });

  it("refuses an outcome with its run's task results when the run is not held at that revision", async () => {
    const run = newRun('batch-stale');
    await startClaimed(database.db, run);

    const [row] = await recordTaskResultsAndFinishRuns(
      database.db,
      [{ runId: run.id, task: result('last#1', 0) }],
      [{ runId: run.id, expectedRevision: 0, outcome: { status: 'completed', output: null } }],
      60_000,
    );

    expect(row).toMatchObject({ finishedRevision: null, recorded: [{ owned: false, task: null }] });
    expect(await database.sql(`SELECT status, revision FROM runs WHERE id = $1`, [run.id])).toEqual([{ status: 'running', revision: 1 }]);
    expect(await database.sql(`SELECT count(*)::int AS n FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ n: 0 }]);
  });

  it('lets one of two batches ending a run at once win: the second waits for the first, then neither records nor finishes', async () => {
    const run = newRun('batch-race');
    await startClaimed(database.db, run);
    const batch = (output: string) => (tx: Parameters<typeof recordTaskResultsAndFinishRuns>[0]) =>
      recordTaskResultsAndFinishRuns(
        tx,
        [{ runId: run.id, task: result('last#1', 1, output) }],
        [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output } }],
        60_000,
      );

    const first = await holdTransaction(database.db, batch('first'));
    const second = batch('second')(database.db);
    await database.someoneWaitsForALock();
    await first.commit();

    expect(first.result[0]).toMatchObject({ finishedRevision: 2, recorded: [{ owned: true }] });
    expect(await second).toMatchObject([{ finishedRevision: null, recorded: [{ owned: false, task: null }] }]);
    expect(await database.sql(`SELECT r.output AS run, t.output AS task FROM runs r JOIN tasks t ON t.run_id = r.id WHERE r.id = $1`, [run.id])).toEqual([
      { run: 'first', task: 'first' },
    ]);
  });
});
