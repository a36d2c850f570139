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
import { storeEvent } from './run-commands.sql';
import { consumeEvent, insertChildStep, insertResolvedStep, lockRunningRun, suspendRun, upsertWaitingStep } from './steps.sql';

describe('the steps where a run suspends, and child steps (steps.sql.ts)', () => {
  let database: SqlTestDatabase;
  let ready: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('steps_sql');
    ready = await listenTo(database.url, 'wf_runs_ready');
  });

  afterAll(async () => {
    await ready?.close();
    await database?.close();
  });

  const stepsOf = (runId: string) =>
    database.sql(`SELECT key, kind, status, attempts, output, child_id, wake_at IS NULL AS never FROM tasks WHERE run_id = $1 ORDER BY key`, [runId]);

  it('lockRunningRun: locks a run running at the revision and returns its shard and tags; a stale revision gets nothing', async () => {
    const run = newRun('locks', { shard: 'eu', tags: { team: 'x' } });
    await startClaimed(database.db, run);

    const held = await holdTransaction(database.db, (tx) => lockRunningRun(tx, run.id, 1));
    const waiting = database.db.transaction((tx) => lockRunningRun(tx, run.id, 1));
    await database.someoneWaitsForALock();
    await held.commit();

    expect(held.result).toEqual({ shard: 'eu', tags: { team: 'x' }, traceparent: null, tracestate: null });
    expect(await waiting).toEqual({ shard: 'eu', tags: { team: 'x' }, traceparent: null, tracestate: null });
    expect(await lockRunningRun(database.db, run.id, 0)).toBeUndefined();
    expect(await lockRunningRun(database.db, uuidv7(), 1)).toBeUndefined();
  });

  it('consumeEvent: the oldest event of that name not consumed yet, once', async () => {
    const run = newRun('events');
    await startClaimed(database.db, run);
    await storeEvent(database.db, run.id, 'go', { n: 1 }, null);
    await storeEvent(database.db, run.id, 'go', { n: 2 }, null);
    await storeEvent(database.db, run.id, 'other', { n: 3 }, null);

    expect(await consumeEvent(database.db, run.id, 'go', 'go#1', undefined)).toEqual({ data: { n: 1 }, sentAt: expect.any(Number) });
    expect(await consumeEvent(database.db, run.id, 'go', 'go#2', undefined)).toEqual({ data: { n: 2 }, sentAt: expect.any(Number) });
    expect(await consumeEvent(database.db, run.id, 'go', 'go#3', undefined)).toBeUndefined();
    expect(await database.sql(`SELECT consumed_by FROM run_events WHERE run_id = $1 ORDER BY id`, [run.id])).toEqual([
      { consumed_by: 'go#1' },
      { consumed_by: 'go#2' },
      { consumed_by: null },
    ]);
  });

  it('consumeEvent with a match: the oldest event whose data has every value at its dotted path, the others kept', async () => {
    const run = newRun('matched-events');
    await startClaimed(database.db, run);
    await storeEvent(database.db, run.id, 'paid', { orderId: 'o-1', customer: { tier: 'gold' }, amount: 10 }, null);
    await storeEvent(database.db, run.id, 'paid', { orderId: 'o-2', customer: { tier: 'gold' }, amount: 20, note: null }, null);
    await storeEvent(database.db, run.id, 'paid', null, null);

    expect(await consumeEvent(database.db, run.id, 'paid', 'a#1', { orderId: 'o-3' })).toBeUndefined();
    // A missing field is no match for null; numbers compare by value; objects whole.
    expect(await consumeEvent(database.db, run.id, 'paid', 'a#2', { orderId: 'o-1', note: null })).toBeUndefined();
    expect(await consumeEvent(database.db, run.id, 'paid', 'a#3', { customer: { tier: 'gold', x: 1 } })).toBeUndefined();
    expect(await consumeEvent(database.db, run.id, 'paid', 'a#4', { 'customer.tier': 'gold', amount: 20.0, note: null })).toMatchObject({
      data: { orderId: 'o-2' },
    });
    expect(await consumeEvent(database.db, run.id, 'paid', 'a#5', { customer: { tier: 'gold' } })).toMatchObject({ data: { orderId: 'o-1' } });
    expect(await database.sql(`SELECT consumed_by FROM run_events WHERE run_id = $1 ORDER BY id`, [run.id])).toEqual([
      { consumed_by: 'a#5' },
      { consumed_by: 'a#4' },
      { consumed_by: null },
    ]);
  });

  it('insertResolvedStep: a step recorded completed at once', async () => {
    const run = newRun('resolved');
    await startClaimed(database.db, run);

    const task = await insertResolvedStep(database.db, { runId: run.id, key: 'nap#1', kind: 'sleep', seq: 2, name: 'nap', output: null });

    expect(task).toEqual({ key: 'nap#1', kind: 'sleep', seq: 2, status: 'completed', attempts: 1, output: null, error: null });
  });

  it('upsertWaitingStep: a waiting step, which a retry wait of the same key re-arms', async () => {
    const run = newRun('waits');
    await startClaimed(database.db, run);
    const retry = { runId: run.id, key: 'retry#1', kind: 'retry' as const, seq: 0, name: 'retry', delayMs: 1_000 };

    expect(await upsertWaitingStep(database.db, { ...retry, attempts: 1 })).toMatchObject({ status: 'waiting', attempts: 1, output: { attempts: 1 } });
    await database.sql(`UPDATE tasks SET status = 'completed' WHERE run_id = $1`, [run.id]);
    expect(await upsertWaitingStep(database.db, { ...retry, attempts: 2 })).toMatchObject({ status: 'waiting', attempts: 2, output: { attempts: 2 } });
    await upsertWaitingStep(database.db, { runId: run.id, key: 'event#1', kind: 'event', seq: 1, name: 'go', attempts: 1, delayMs: null });

    expect(await stepsOf(run.id)).toEqual([
      { key: 'event#1', kind: 'event', status: 'waiting', attempts: 1, output: { attempts: 1 }, child_id: null, never: true },
      { key: 'retry#1', kind: 'retry', status: 'waiting', attempts: 2, output: { attempts: 2 }, child_id: null, never: false },
    ]);
  });

  it('insertChildStep: waiting for the child, or completed at once with its id when the parent does not wait', async () => {
    const run = newRun('child-steps');
    await startClaimed(database.db, run);
    const [waited, started] = [uuidv7(), uuidv7()];

    await insertChildStep(database.db, { runId: run.id, key: 'a#1', seq: 0, name: 'a', wait: true, childId: waited, timeoutMs: null });
    const task = await insertChildStep(database.db, { runId: run.id, key: 'b#1', seq: 1, name: 'b', wait: false, childId: started, timeoutMs: null });

    expect(task).toMatchObject({ kind: 'child', status: 'completed', output: { childId: started } });
    expect(await stepsOf(run.id)).toEqual([
      { key: 'a#1', kind: 'child', status: 'waiting', attempts: 1, output: null, child_id: waited, never: true },
      { key: 'b#1', kind: 'child', status: 'completed', attempts: 1, output: { childId: started }, child_id: started, never: true },
    ]);
  });

  it('suspendRun: running to waiting at revision + 1, due after the delay or never, announced only when due now', async () => {
    const [forever, now] = [newRun('suspends'), newRun('suspends-now')];
    await startClaimed(database.db, forever);
    await startClaimed(database.db, now);
    const readyBefore = (await queuesWokenBefore(database.db, ready, 'suspends-before')).length + 1;

    await suspendRun(database.db, forever.id, null);
    await suspendRun(database.db, now.id, 0);

    const runOf = (id: string) => database.sql(`SELECT status, revision, heartbeat_at, due_at = 'infinity' AS never FROM runs WHERE id = $1`, [id]);
    expect(await runOf(forever.id)).toEqual([{ status: 'waiting', revision: 2, heartbeat_at: null, never: true }]);
    expect(await runOf(now.id)).toEqual([{ status: 'waiting', revision: 2, heartbeat_at: null, never: false }]);
    expect(
      await database.sql(`SELECT from_status, to_status, worker_id FROM run_transitions WHERE run_id = $1 ORDER BY id DESC LIMIT 1`, [forever.id]),
    ).toEqual([{ from_status: 'running', to_status: 'waiting', worker_id: 'worker-a' }]);
    expect((await queuesWokenBefore(database.db, ready, 'suspends-after')).slice(readyBefore)).toEqual(['suspends-now:1']);
  });
});
