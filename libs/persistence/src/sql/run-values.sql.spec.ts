import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../../../../test/support/poll';
import {
  createSqlTestDatabase,
  holdTransaction,
  type Listener,
  listenTo,
  newRun,
  type SqlTestDatabase,
  startClaimed,
} from '../../../../test/support/sql-database';
import { watchFeed } from './feed.sql';
import { finishRuns } from './reports.sql';
import { queryRun, recordRunValues, runValues } from './run-values.sql';

describe('run values', () => {
  let database: SqlTestDatabase;
  let progress: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('run_values_sql');
    progress = await listenTo(database.url, 'wf_run_progress');
  });

  afterAll(async () => {
    await progress?.close();
    await database?.close();
  });

  const valuesOf = (id: string) => database.sql<{ name: string; value: unknown }>(`SELECT name, value FROM run_values WHERE run_id = $1 ORDER BY name`, [id]);
  const progressOf = async (id: string) =>
    (await database.sql<{ progress: unknown; at: Date | null }>(`SELECT progress, progress_at AS at FROM runs WHERE id = $1`, [id]))[0];

  it('records values and progress under the claim, and refuses them (writing nothing) at a stale revision or for an ended run', async () => {
    const [held, ended] = [newRun('values'), newRun('values-ended')];
    await startClaimed(database.db, held);
    await startClaimed(database.db, ended);
    await finishRuns(database.db, [{ runId: ended.id, expectedRevision: 1, outcome: { status: 'completed', output: null }, returnRun: false }]);

    const recorded = await recordRunValues(database.db, [
      { runId: held.id, expectedRevision: 1, exposed: { status: 'paying', total: 3 }, progress: { value: { done: 1, of: 3 } } },
      { runId: held.id, expectedRevision: 0, exposed: { status: 'stale' }, progress: { value: 'stale' } },
      { runId: ended.id, expectedRevision: 1, exposed: { status: 'late' }, progress: { value: 'late' } },
    ]);

    expect(recorded).toEqual([true, false, false]);
    expect(await valuesOf(held.id)).toEqual([
      { name: 'status', value: 'paying' },
      { name: 'total', value: 3 },
    ]);
    expect((await progressOf(held.id)).progress).toEqual({ done: 1, of: 3 });
    expect(await valuesOf(ended.id)).toEqual([]);
    expect(await progressOf(ended.id)).toEqual({ progress: null, at: null });
  });

  it('overwrites a value by name, leaves an unchanged one alone, and keeps a progress of null apart from none', async () => {
    const run = newRun('values-again');
    await startClaimed(database.db, run);
    await recordRunValues(database.db, [{ runId: run.id, expectedRevision: 1, exposed: { a: 1, b: 1 } }]);
    const [before] = await database.sql<{ at: Date }>(`SELECT updated_at AS at FROM run_values WHERE run_id = $1 AND name = 'b'`, [run.id]);

    await recordRunValues(database.db, [{ runId: run.id, expectedRevision: 1, exposed: { a: 2, b: 1 }, progress: { value: null } }]);

    expect(await valuesOf(run.id)).toEqual([
      { name: 'a', value: 2 },
      { name: 'b', value: 1 },
    ]);
    const [after] = await database.sql<{ at: Date }>(`SELECT updated_at AS at FROM run_values WHERE run_id = $1 AND name = 'b'`, [run.id]);
    expect(after.at).toEqual(before.at);
    const { progress: value, at } = await progressOf(run.id);
    expect(value).toBeNull();
    expect(at).toBeInstanceOf(Date);
  });

  it('waits for a writer that holds the run, then writes nothing if that writer moved it on', async () => {
    const run = newRun('values-raced');
    await startClaimed(database.db, run);
    const finishing = await holdTransaction(database.db, (tx) =>
      finishRuns(tx, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 1 }, returnRun: false }]),
    );

    const recording = recordRunValues(database.db, [{ runId: run.id, expectedRevision: 1, exposed: { late: true }, progress: { value: 9 } }]);
    await database.someoneWaitsForALock();
    await finishing.commit();

    expect(await recording).toEqual([false]);
    expect(await valuesOf(run.id)).toEqual([]);
    expect((await progressOf(run.id)).at).toBeNull();
  });

  it('announces progress on wf_run_progress only while a feed is watched', async () => {
    const [unwatched, watched] = [newRun('progress-unwatched'), newRun('progress-watched')];
    await startClaimed(database.db, unwatched);
    await startClaimed(database.db, watched);
    await recordRunValues(database.db, [{ runId: unwatched.id, expectedRevision: 1, exposed: {}, progress: { value: 'quiet' } }]);

    await watchFeed(database.db, 'run-values-spec', 60_000);
    await recordRunValues(database.db, [{ runId: watched.id, expectedRevision: 1, exposed: {}, progress: { value: { step: 'two' } } }]);

    await eventually('the progress announced', async () => progress.payloads.length > 0);
    expect(progress.payloads).toHaveLength(1);
    const [id, workflow, version, value, atMs] = JSON.parse(progress.payloads[0]) as unknown[];
    expect([id, workflow, version, value]).toEqual([watched.id, 'progress-watched', '1', { step: 'two' }]);
    expect(Math.abs((atMs as number) - Date.now())).toBeLessThan(60_000);
  });

  it('answers a query with the exposed value, else the last completed task of that name; undefined for no run', async () => {
    const run = newRun('values-query');
    await startClaimed(database.db, run);
    await database.sql(
      `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output)
       VALUES ($1, 'total#1', 'task', 1, 'total', 'completed', 1, '10'), ($1, 'total#2', 'task', 2, 'total', 'completed', 1, '20'),
              ($1, 'total#3', 'task', 3, 'total', 'failed', 1, NULL)`,
      [run.id],
    );
    await recordRunValues(database.db, [{ runId: run.id, expectedRevision: 1, exposed: { status: 'done' } }]);

    expect(await queryRun(database.db, run.id, 'status')).toMatchObject({ hasValue: true, value: 'done', hasTask: false });
    expect(await queryRun(database.db, run.id, 'total')).toMatchObject({ hasValue: false, hasTask: true, taskOutput: 20 });
    expect(await queryRun(database.db, run.id, 'nothing')).toMatchObject({ hasValue: false, hasTask: false });
    expect(await queryRun(database.db, newRun('none').id, 'status')).toBeUndefined();
  });

  it("lists a run's values by name: none for a run without any, undefined for no run", async () => {
    const run = newRun('values-list');
    await startClaimed(database.db, run);
    expect(await runValues(database.db, run.id)).toEqual([]);
    await recordRunValues(database.db, [{ runId: run.id, expectedRevision: 1, exposed: { total: 3, stage: { at: 'paying' } } }]);

    expect(await runValues(database.db, run.id)).toEqual([
      { name: 'stage', value: { at: 'paying' }, updatedAt: expect.any(Date) },
      { name: 'total', value: 3, updatedAt: expect.any(Date) },
    ]);
    expect(await runValues(database.db, newRun('none').id)).toBeUndefined();
  });
});
