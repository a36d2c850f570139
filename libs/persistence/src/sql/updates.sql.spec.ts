import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { uuidv7 } from '../ids';
import {
  createSqlTestDatabase,
  holdTransaction,
  type Listener,
  listenTo,
  newRun,
  queuesWokenBefore,
  type SqlTestDatabase,
  startClaimed,
} from '../../../../test/support/sql-database';
import { eventually } from '../../../../test/support/poll';
import { finishRuns, retryRunLater } from './reports.sql';
import { lockRunStatus, retryFailedRun } from './run-commands.sql';
import { suspendRun, upsertWaitingStep } from './steps.sql';
import { findPendingUpdates, insertUpdate, recordAppliedUpdates, refusePendingUpdates } from './updates.sql';

describe('updates sent to runs (updates.sql.ts)', () => {
  let database: SqlTestDatabase;
  let ready: Listener;
  let answered: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('updates_sql');
    ready = await listenTo(database.url, 'wf_runs_ready');
    answered = await listenTo(database.url, 'wf_update_answered');
  });

  afterAll(async () => {
    await Promise.all([ready?.close(), answered?.close()]);
    await database?.close();
  });

  /** A run suspended at a waiting step of `kind` for an hour. */
  const suspendedAt = async (workflow: string, kind: 'sleep' | 'retry' | 'external') => {
    const run = newRun(workflow);
    await startClaimed(database.db, run);
    await upsertWaitingStep(database.db, { runId: run.id, key: `${kind}:nap#1`, kind, seq: 0, name: 'nap', attempts: 1, delayMs: 3_600_000 });
    await suspendRun(database.db, run.id, 3_600_000);
    return run;
  };
  const dueNow = async (id: string) => (await database.sql<{ due: boolean }>(`SELECT due_at <= now() AS due FROM runs WHERE id = $1`, [id]))[0].due;

  it('insertUpdate: makes a run suspended at a sleep due now (announced), not one waiting to retry a task', async () => {
    const [sleeping, retrying] = [await suspendedAt('updates-sleeping', 'sleep'), await suspendedAt('updates-retrying', 'retry')];
    // A completion-token wait is a wait like the others (also as a wait group's branch).
    const awaiting = await suspendedAt('updates-awaiting', 'external');
    await insertUpdate(database.db, { id: uuidv7(), runId: awaiting.id, name: 'add', input: null });
    expect(await dueNow(awaiting.id)).toBe(true);
    const before = (await queuesWokenBefore(database.db, ready, 'updates-before')).length + 1;

    await insertUpdate(database.db, { id: uuidv7(), runId: sleeping.id, name: 'add', input: { sku: 'a' } });
    await insertUpdate(database.db, { id: uuidv7(), runId: retrying.id, name: 'add', input: null });

    expect([await dueNow(sleeping.id), await dueNow(retrying.id)]).toEqual([true, false]);
    expect((await queuesWokenBefore(database.db, ready, 'updates-after')).slice(before)).toEqual(['updates-sleeping:1']);
    // The sleep keeps its own deadline: the claim resolves only a wait whose time came.
    expect(await database.sql(`SELECT status, wake_at > now() AS later FROM tasks WHERE run_id = $1`, [sleeping.id])).toEqual([
      { status: 'waiting', later: true },
    ]);
  });

  it('suspendRun at a wait: not while updates are pending; then until the wait is due, its deadline kept', async () => {
    const run = newRun('updates-resuspend');
    await startClaimed(database.db, run);
    await upsertWaitingStep(database.db, { runId: run.id, key: 'sleep:nap#1', kind: 'sleep', seq: 0, name: 'nap', attempts: 0, delayMs: 3_600_000 });
    const id = uuidv7();
    await insertUpdate(database.db, { id, runId: run.id, name: 'add', input: null });

    expect(await suspendRun(database.db, run.id, null, 'sleep:nap#1')).toBe(false);
    expect(await database.sql(`SELECT status, revision FROM runs WHERE id = $1`, [run.id])).toEqual([{ status: 'running', revision: 1 }]);
    await recordAppliedUpdates(database.db, run.id, 0, [{ id, key: 'update:add#1', status: 'completed', output: 1, error: null }]);
    expect(await suspendRun(database.db, run.id, null, 'sleep:nap#1')).toBe(true);
    expect(
      await database.sql(
        `SELECT r.status, r.due_at = t.wake_at AS kept FROM runs r JOIN tasks t ON t.run_id = r.id AND t.key = 'sleep:nap#1' WHERE r.id = $1`,
        [run.id],
      ),
    ).toEqual([{ status: 'waiting', kept: true }]);
  });

  it('insertUpdate: positions follow the order sends took the run lock in', async () => {
    const run = newRun('updates-order');
    await startClaimed(database.db, run);
    const [first, second] = [uuidv7(), uuidv7()];
    // The second id is taken first, but its send waits for the first's lock.
    const held = await holdTransaction(database.db, async (tx) => {
      await lockRunStatus(tx, run.id);
      await insertUpdate(tx, { id: second, runId: run.id, name: 'add', input: 2 });
    });
    const waiting = database.db.transaction(async (tx) => {
      await lockRunStatus(tx, run.id);
      await insertUpdate(tx, { id: first, runId: run.id, name: 'add', input: 1 });
    });
    await database.someoneWaitsForALock();
    await held.commit();
    await waiting;
    expect((await findPendingUpdates(database.db, run.id, 10)).map((update) => update.input)).toEqual([2, 1]);
  });

  it('recordAppliedUpdates: answers pending updates once, with their steps at the wait, announced; a resend changes nothing', async () => {
    const run = newRun('updates-record');
    await startClaimed(database.db, run);
    const [added, failed] = [uuidv7(), uuidv7()];
    await insertUpdate(database.db, { id: added, runId: run.id, name: 'add', input: { sku: 'a' } });
    await insertUpdate(database.db, { id: failed, runId: run.id, name: 'add', input: { sku: 'b' } });
    const applied = [
      { id: added, key: 'update:add#1', status: 'completed' as const, output: 1, error: null },
      { id: failed, key: 'update:add#2', status: 'failed' as const, output: null, error: { name: 'Error', message: 'no' } },
    ];

    await recordAppliedUpdates(database.db, run.id, 3, applied);
    await recordAppliedUpdates(database.db, run.id, 3, [{ ...applied[0], output: 99 }]);

    expect(await database.sql(`SELECT status, output, error FROM run_updates WHERE run_id = $1 ORDER BY position`, [run.id])).toEqual([
      { status: 'completed', output: 1, error: null },
      { status: 'failed', output: null, error: { name: 'Error', message: 'no' } },
    ]);
    expect(await database.sql(`SELECT key, kind, seq, status, output FROM tasks WHERE run_id = $1 ORDER BY key`, [run.id])).toEqual([
      { key: 'update:add#1', kind: 'update', seq: 3, status: 'completed', output: { updateId: added, input: { sku: 'a' }, output: 1 } },
      { key: 'update:add#2', kind: 'update', seq: 3, status: 'failed', output: { updateId: failed, input: { sku: 'b' }, output: null } },
    ]);
    await eventually('both answers announced', async () => answered.payloads.includes(added) && answered.payloads.includes(failed));
    expect(answered.payloads.filter((id) => id === added)).toEqual([added]);
  });

  it('refusePendingUpdates refuses only an ended run’s; a retry of a failed run refuses them before its next attempt', async () => {
    const [running, ended, retried] = [newRun('updates-running'), newRun('updates-ended'), newRun('updates-retried')];
    for (const run of [running, ended, retried]) {
      await startClaimed(database.db, run);
      await insertUpdate(database.db, { id: uuidv7(), runId: run.id, name: 'add', input: null });
    }
    const failure = { status: 'failed' as const, error: { name: 'E', message: 'm' } };
    await finishRuns(database.db, [
      { runId: ended.id, expectedRevision: 1, outcome: { status: 'completed', output: null } },
      { runId: retried.id, expectedRevision: 1, outcome: failure },
    ]);

    await refusePendingUpdates(database.db, running.id);
    await refusePendingUpdates(database.db, ended.id);
    await retryFailedRun(database.db, retried.id);

    const statusOf = async (id: string) => (await database.sql<{ status: string }>(`SELECT status FROM run_updates WHERE run_id = $1`, [id]))[0].status;
    expect([await statusOf(running.id), await statusOf(ended.id), await statusOf(retried.id)]).toEqual(['pending', 'refused', 'refused']);
  });

  it('a retried run keeps its failed updates, and decides again a wait group whose task branch failed (both retries)', async () => {
    const later = newRun('updates-retry-later');
    const failed = newRun('updates-retry-failed');
    for (const run of [later, failed]) {
      await startClaimed(database.db, run);
      await database.sql(
        `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, error) VALUES
           ($1, 'update:add#1', 'update', 0, 'add', 'failed', 1, '{"name":"E","message":"m"}'),
           ($1, 'group:pay#1', 'group', 1, 'pay', 'completed', 1, NULL),
           ($1, 'group:pay#1/0', 'task', 1, 'pay', 'failed', 1, '{"name":"E","message":"m"}'),
           ($1, 'group:pay#1/1', 'sleep', 1, 'pay', 'completed', 0, NULL),
           ($1, 'kept#1', 'task', 2, 'kept', 'completed', 1, NULL)`,
        [run.id],
      );
    }
    await retryRunLater(database.db, { runId: later.id, expectedRevision: 1, error: { name: 'E', message: 'm' }, delayMs: 60_000 });
    await finishRuns(database.db, [{ runId: failed.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'm' } } }]);
    await retryFailedRun(database.db, failed.id);

    const keys = async (id: string) =>
      (await database.sql<{ key: string }>(`SELECT key FROM tasks WHERE run_id = $1 ORDER BY key`, [id])).map((row) => row.key);
    const kept = ['group:pay#1/1', 'kept#1', 'update:add#1'];
    expect([await keys(later.id), await keys(failed.id)]).toEqual([kept, kept]);
  });
});
