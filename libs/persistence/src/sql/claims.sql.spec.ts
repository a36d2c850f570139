import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { queueName } from '@nest-durable/common';
import { createSqlTestDatabase, holdTransaction, newRun, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { type ClaimParams, claimRunsCommon } from './claims.sql';
import { startRuns } from './runs-start.sql';
import { suspendRun, upsertWaitingStep } from './steps.sql';

/** A claim of `workflow`'s queue (version 1) by worker-a, with `overrides`. */
const claimOf = (workflow: string, overrides: Partial<ClaimParams> = {}): ClaimParams => ({
  queues: [{ queue: queueName(workflow, '1'), limit: 10 }],
  limit: 10,
  workerId: 'worker-a',
  buildId: 'build-a',
  claimMinIdleTimeMs: 60_000,
  maxStalls: 3,
  ...overrides,
});

describe('the claim statement, common form (claimRunsCommon)', () => {
  let database: SqlTestDatabase;

  beforeAll(async () => {
    database = await createSqlTestDatabase('claims_sql');
  });

  afterAll(async () => {
    await database?.close();
  });

  it('takes due runs, highest priority first then oldest due, up to the limit: running at revision + 1 for the worker, its build id recorded, with their transitions', async () => {
    const [first, urgent, second, later] = [
      newRun('takes'),
      newRun('takes', { priority: 5 }),
      newRun('takes'),
      newRun('takes', { runAt: new Date(Date.now() + 3_600_000) }),
    ];
    await startRuns(database.db, [first]); // due before the others (their statement's now() is later)
    await startRuns(database.db, [urgent, second, later]);
    // Ready for ten seconds already: the claim reports how long it waited (its due time to the claim's now()).
    await database.sql(`UPDATE runs SET due_at = due_at - interval '10 seconds' WHERE id = $1`, [urgent.id]);

    const rows = await claimRunsCommon(database.db, claimOf('takes', { queues: [{ queue: 'takes:1', limit: 2, wakeups: ['w#1'] }] }));

    expect(rows.map((row) => [row.kind, row.id, row.revision, row.tasks])).toEqual([
      ['run', urgent.id, 1, []],
      ['run', first.id, 1, []],
    ]);
    expect(rows[0]).toMatchObject({ workflow: 'takes', version: '1', queue: 'takes:1', attempt: 1, input: { workflow: 'takes' }, wakeup: 'w#1' });
    expect(rows[0].readyForSeconds).toBeCloseTo(10, 0);
    const stored = await database.sql<{ id: string }>(`SELECT id, status, revision, claimed_by, build_id FROM runs WHERE workflow = 'takes'`);
    expect(Object.fromEntries(stored.map(({ id, ...run }) => [id, run]))).toEqual({
      [first.id]: { status: 'running', revision: 1, claimed_by: 'worker-a', build_id: 'build-a' },
      [urgent.id]: { status: 'running', revision: 1, claimed_by: 'worker-a', build_id: 'build-a' },
      [second.id]: { status: 'queued', revision: 0, claimed_by: null, build_id: null },
      [later.id]: { status: 'queued', revision: 0, claimed_by: null, build_id: null },
    });
    expect(await database.sql(`SELECT from_status, to_status, revision, worker_id FROM run_transitions WHERE run_id = $1 ORDER BY id`, [urgent.id])).toEqual([
      { from_status: null, to_status: 'queued', revision: 0, worker_id: null },
      { from_status: 'queued', to_status: 'running', revision: 1, worker_id: 'worker-a' },
    ]);
  });

  it('records no build id for a worker that sends none (an older worker), replacing the one of the build that ran the run before', async () => {
    const run = newRun('unbuilt');
    await startRuns(database.db, [run]);
    await database.sql(`UPDATE runs SET build_id = 'build-old' WHERE id = $1`, [run.id]);

    await claimRunsCommon(database.db, claimOf('unbuilt', { buildId: null }));

    expect(await database.sql(`SELECT status, build_id FROM runs WHERE id = $1`, [run.id])).toEqual([{ status: 'running', build_id: null }]);
  });

  it('answers `controlled`, and takes nothing, for a queue whose version has an active control', async () => {
    await startRuns(database.db, [newRun('paused')]);
    await database.sql(`INSERT INTO workflow_controls (workflow, version, paused) VALUES ('paused', '1', true)`);

    const rows = await claimRunsCommon(database.db, claimOf('paused'));

    expect(rows.map((row) => row.kind)).toEqual(['controlled']);
    expect(await database.sql(`SELECT status FROM runs WHERE workflow = 'paused'`)).toEqual([{ status: 'queued' }]);
  });

  it('answers `idle`, and takes nothing, for a queue with a claim gone idle', async () => {
    const [held, ready] = [newRun('idles'), newRun('idles')];
    await startRuns(database.db, [held]);
    await claimRunsCommon(database.db, claimOf('idles'));
    await startRuns(database.db, [ready]);
    await database.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [held.id]);

    const rows = await claimRunsCommon(database.db, claimOf('idles', { workerId: 'worker-b' }));

    expect(rows.map((row) => row.kind)).toEqual(['idle']);
    expect(await database.sql(`SELECT status, claimed_by FROM runs WHERE id = $1`, [held.id])).toEqual([{ status: 'running', claimed_by: 'worker-a' }]);
    expect(await database.sql(`SELECT status, claimed_by FROM runs WHERE id = $1`, [ready.id])).toEqual([{ status: 'queued', claimed_by: null }]);
  });

  it('two claims at once take disjoint runs (SKIP LOCKED); the second hands back a wake-up while a run it could not lock still waits', async () => {
    const runs = [newRun('shared'), newRun('shared'), newRun('shared')];
    await startRuns(database.db, runs);

    const first = await holdTransaction(database.db, (tx) => claimRunsCommon(tx, claimOf('shared', { queues: [{ queue: 'shared:1', limit: 1 }] })));
    // While the first holds its run, uncommitted: the second skips it, takes the two others, and one of its
    // three wake-ups is left over while a run (the one locked) still waits.
    const second = await claimRunsCommon(
      database.db,
      claimOf('shared', { workerId: 'worker-b', queues: [{ queue: 'shared:1', limit: 3, wakeups: ['w#1', 'w#2', 'w#3'] }] }),
    );
    await first.commit();

    const firstTaken = first.result.filter((row) => row.kind === 'run').map((row) => row.id);
    const secondTaken = second.filter((row) => row.kind === 'run').map((row) => row.id);
    expect(firstTaken).toHaveLength(1);
    expect(secondTaken).toHaveLength(2);
    expect(new Set([...firstTaken, ...secondTaken])).toEqual(new Set(runs.map((run) => run.id)));
    expect(second.filter((row) => row.kind === 'requeue').map((row) => [row.queue, row.wakeup])).toEqual([['shared:1', 'w#3']]);
  });

  it("resolves the sleep that ended of a run it takes, and returns the run's recorded steps with it", async () => {
    const run = newRun('sleeps');
    await startRuns(database.db, [run]);
    await claimRunsCommon(database.db, claimOf('sleeps'));
    await database.db.transaction(async (tx) => {
      await upsertWaitingStep(tx, { runId: run.id, key: 'nap#1', kind: 'sleep', seq: 0, name: 'nap', attempts: 1, delayMs: 0 });
      await suspendRun(tx, run.id, 0);
    });

    const [taken] = await claimRunsCommon(database.db, claimOf('sleeps'));

    expect(taken).toMatchObject({ kind: 'run', id: run.id, revision: 3 });
    expect(taken.tasks).toEqual([{ key: 'nap#1', kind: 'sleep', seq: 0, status: 'completed', attempts: 1, output: null, error: null }]);
    expect(await database.sql(`SELECT status, output FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ status: 'completed', output: null }]);
  });

  it("leaves a wait group's branch steps waiting (the group decides them), and does not return them", async () => {
    const run = newRun('group-branches');
    await startRuns(database.db, [run]);
    await claimRunsCommon(database.db, claimOf('group-branches'));
    await database.db.transaction(async (tx) => {
      await upsertWaitingStep(tx, { runId: run.id, key: 'group:race#1/0', kind: 'event', seq: 0, name: 'go', attempts: 0, delayMs: null });
      await upsertWaitingStep(tx, { runId: run.id, key: 'group:race#1/1', kind: 'sleep', seq: 0, name: 'race', attempts: 0, delayMs: 0 });
      await suspendRun(tx, run.id, 0);
    });

    const [taken] = await claimRunsCommon(database.db, claimOf('group-branches'));

    expect(taken).toMatchObject({ kind: 'run', id: run.id, tasks: [] });
    expect(await database.sql(`SELECT key, status FROM tasks WHERE run_id = $1 ORDER BY key`, [run.id])).toEqual([
      { key: 'group:race#1/0', status: 'waiting' },
      { key: 'group:race#1/1', status: 'waiting' },
    ]);
  });
});
