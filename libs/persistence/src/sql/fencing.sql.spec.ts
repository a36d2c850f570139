import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { uuidv7 } from '../ids';
import { createSqlTestDatabase, newRun, type SqlTestDatabase, startClaimed } from '../../../../test/support/sql-database';
import { findExistingRunIds, findLandedOutcomes, findLandedSuspension, findSteps } from './fencing.sql';
import { finishRuns, recordTaskResults } from './reports.sql';
import { claimRunsCommon } from './claims.sql';
import { suspendRun, upsertWaitingStep } from './steps.sql';

describe('the reads after a fenced write matched nothing (fencing.sql.ts)', () => {
  let database: SqlTestDatabase;

  beforeAll(async () => {
    database = await createSqlTestDatabase('fencing_sql');
  });

  afterAll(async () => {
    await database?.close();
  });

  it('findExistingRunIds: the ids of the runs that exist', async () => {
    const run = newRun('exists');
    await startClaimed(database.db, run);
    const missing = uuidv7();

    expect(await findExistingRunIds(database.db, [missing, run.id])).toEqual([run.id]);
  });

  it('findSteps: the recorded steps by run and key, in the order asked, undefined where there is none', async () => {
    const run = newRun('steps');
    await startClaimed(database.db, run);
    const task = { expectedRevision: 1, seq: 0, status: 'completed' as const, attempts: 1, error: null };
    await recordTaskResults(
      database.db,
      [
        { runId: run.id, task: { ...task, key: 'a#1', name: 'a', output: 'A' } },
        { runId: run.id, task: { ...task, key: 'b#1', name: 'b', output: 'B' } },
      ],
      { finishing: [], refreshAfterMs: 60_000 },
    );

    const found = await findSteps(database.db, [
      { runId: run.id, key: 'b#1' },
      { runId: run.id, key: 'missing#1' },
      { runId: run.id, key: 'a#1' },
    ]);

    expect(found.map((step) => step?.output)).toEqual(['B', undefined, 'A']);
    expect(found[0]).toEqual({ key: 'b#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 'B', error: null });
    expect(await findSteps(database.db, [])).toEqual([]);
  });

  it('findLandedOutcomes: an outcome that moved its run on with this very status and output, not a different one', async () => {
    const run = newRun('landed');
    await startClaimed(database.db, run);
    await finishRuns(database.db, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: { n: 1 } } }]);

    const landed = await findLandedOutcomes(database.db, [
      { runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: { n: 1 } } },
      { runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: { n: 2 } } },
      { runId: run.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'm' } } },
    ]);

    expect(landed).toEqual([{ revision: 2, workflow: 'landed' }, undefined, undefined]);
  });

  it('findLandedSuspension: the waiting step a suspension that landed left, until its wait is resolved', async () => {
    const run = newRun('suspended');
    await startClaimed(database.db, run);
    await database.db.transaction(async (tx) => {
      await upsertWaitingStep(tx, { runId: run.id, key: 'nap#1', kind: 'sleep', seq: 0, name: 'nap', attempts: 1, delayMs: 0 });
      await suspendRun(tx, run.id, 0);
    });
    const resend = { runId: run.id, expectedRevision: 1, key: 'nap#1', kind: 'sleep' as const };

    expect(await findLandedSuspension(database.db, resend)).toMatchObject({ key: 'nap#1', status: 'waiting' });
    expect(await findLandedSuspension(database.db, { ...resend, kind: 'event' })).toBeUndefined();

    await claimRunsCommon(database.db, {
      queues: [{ queue: 'suspended:1', limit: 1 }],
      limit: 1,
      workerId: 'worker-a',
      buildId: null,
      claimMinIdleTimeMs: 60_000,
      maxStalls: 3,
    });
    expect(await findLandedSuspension(database.db, resend)).toBeUndefined();
  });
});
