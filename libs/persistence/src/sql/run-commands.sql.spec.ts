import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { uuidv7 } from '../ids';
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
import { claimRunsCommon } from './claims.sql';
import { finishRuns, recordTaskResults } from './reports.sql';
import { cancelRunTree, deliverEvent, failStalledTakenWith, lockRunStatus, retryFailedRun, storeEvent, wakeSleepingRun } from './run-commands.sql';
import { insertChildRun, startRuns } from './runs-start.sql';
import { insertChildStep, suspendRun, upsertWaitingStep } from './steps.sql';

describe("clients' and operators' commands on a run (run-commands.sql.ts)", () => {
  let database: SqlTestDatabase;
  let finished: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('run_commands_sql');
    finished = await listenTo(database.url, 'wf_run_finished');
  });

  afterAll(async () => {
    await finished?.close();
    await database?.close();
  });

  const runOf = (id: string) => database.sql(`SELECT status, revision, attempt, stalls, due_at <= now() AS due FROM runs WHERE id = $1`, [id]);

  /** A running parent waiting on a child run it started (queued), as StepRepository.startChild leaves them. */
  async function parentWaitingOnChild(workflow: string) {
    const parent = newRun(workflow);
    const child = newRun(`${workflow}-child`, { parentId: parent.id });
    await startClaimed(database.db, parent);
    await database.db.transaction(async (tx) => {
      await insertChildRun(tx, child);
      await insertChildStep(tx, { runId: parent.id, key: 'child#1', seq: 0, name: 'child', wait: true, childId: child.id, timeoutMs: null });
      await suspendRun(tx, parent.id, null);
    });
    return { parent, child };
  }

  it('lockRunStatus: the status of a run, locked; none for an unknown run', async () => {
    const run = newRun('locks');
    await startRuns(database.db, [run]);

    const held = await holdTransaction(database.db, (tx) => lockRunStatus(tx, run.id));
    const waiting = database.db.transaction((tx) => lockRunStatus(tx, run.id));
    await database.someoneWaitsForALock();
    await held.commit();

    expect(held.result).toBe('queued');
    expect(await waiting).toBe('queued');
    expect(await lockRunStatus(database.db, uuidv7())).toBeUndefined();
  });

  describe('cancelRunTree', () => {
    it('cancels a run and its unfinished descendants at revision + 1, with their transitions, and announces them', async () => {
      const { parent, child } = await parentWaitingOnChild('cancels');
      const grandchild = newRun('cancels-grandchild', { parentId: child.id });
      await startRuns(database.db, [grandchild]);

      expect(await database.db.transaction((tx) => cancelRunTree(tx, parent.id))).toBe(3);

      expect(await runOf(parent.id)).toMatchObject([{ status: 'cancelled', revision: 3 }]);
      expect(await runOf(child.id)).toMatchObject([{ status: 'cancelled', revision: 1 }]);
      expect(await runOf(grandchild.id)).toMatchObject([{ status: 'cancelled', revision: 1 }]);
      expect(await database.sql(`SELECT from_status, to_status FROM run_transitions WHERE run_id = $1 ORDER BY id DESC LIMIT 1`, [parent.id])).toEqual([
        { from_status: 'waiting', to_status: 'cancelled' },
      ]);
      await eventually('the three runs announced', async () => [parent.id, child.id, grandchild.id].every((id) => finished.payloads.includes(id)));
      expect(await database.db.transaction((tx) => cancelRunTree(tx, parent.id))).toBe(0);
    });

    it("wakes the parent waiting on the cancelled run with the child's outcome", async () => {
      const { parent, child } = await parentWaitingOnChild('cancels-child');

      await database.db.transaction((tx) => cancelRunTree(tx, child.id));

      expect(await database.sql(`SELECT status, output->>'status' AS child FROM tasks WHERE run_id = $1`, [parent.id])).toEqual([
        { status: 'completed', child: 'cancelled' },
      ]);
      expect(await runOf(parent.id)).toEqual([{ status: 'waiting', revision: 2, attempt: 1, stalls: 0, due: true }]);
    });

    it("fences the cancelled run's worker off: its outcome at the old revision finishes nothing", async () => {
      const run = newRun('cancels-running');
      await startClaimed(database.db, run);

      await database.db.transaction((tx) => cancelRunTree(tx, run.id));

      const [refused] = await finishRuns(database.db, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 1 } }]);
      expect(refused.finishedRevision).toBeNull();
      expect(await runOf(run.id)).toMatchObject([{ status: 'cancelled', revision: 2 }]);
    });
  });

  describe('deliverEvent and storeEvent', () => {
    it('resolves the waiting step of that name with the data and makes the run due now', async () => {
      const run = newRun('events');
      await startClaimed(database.db, run);
      await database.db.transaction(async (tx) => {
        await upsertWaitingStep(tx, { runId: run.id, key: 'approval#1', kind: 'event', seq: 0, name: 'approval', attempts: 1, delayMs: null });
        await suspendRun(tx, run.id, null);
      });

      const key = await database.db.transaction(async (tx) => {
        const delivered = await deliverEvent(tx, run.id, 'approval', { ok: true });
        await storeEvent(tx, run.id, 'approval', { ok: true }, delivered ?? null);
        return delivered;
      });

      expect(key).toBe('approval#1');
      expect(await database.sql(`SELECT status, output FROM tasks WHERE run_id = $1`, [run.id])).toEqual([
        { status: 'completed', output: { timedOut: false, data: { ok: true } } },
      ]);
      expect(await runOf(run.id)).toMatchObject([{ status: 'waiting', due: true }]);
      expect(await database.sql(`SELECT name, data, consumed_by FROM run_events WHERE run_id = $1`, [run.id])).toEqual([
        { name: 'approval', data: { ok: true }, consumed_by: 'approval#1' },
      ]);
    });

    it('delivers nothing to a run not waiting for it; the event is kept unconsumed for a later wait', async () => {
      const run = newRun('events-early');
      await startClaimed(database.db, run);

      expect(await deliverEvent(database.db, run.id, 'approval', null)).toBeUndefined();
      await storeEvent(database.db, run.id, 'approval', null, null);

      expect(await database.sql(`SELECT data, consumed_by FROM run_events WHERE run_id = $1`, [run.id])).toEqual([{ data: null, consumed_by: null }]);
    });
  });

  it('wakeSleepingRun: a run waiting on a sleep becomes due now; one not sleeping is left alone', async () => {
    const [sleeping, running] = [newRun('sleeps'), newRun('sleeps-not')];
    await startClaimed(database.db, sleeping);
    await startClaimed(database.db, running);
    await database.db.transaction(async (tx) => {
      await upsertWaitingStep(tx, { runId: sleeping.id, key: 'nap#1', kind: 'sleep', seq: 0, name: 'nap', attempts: 1, delayMs: 3_600_000 });
      await suspendRun(tx, sleeping.id, 3_600_000);
    });
    expect(await runOf(sleeping.id)).toMatchObject([{ due: false }]);

    expect(await wakeSleepingRun(database.db, sleeping.id)).toBe(true);
    expect(await wakeSleepingRun(database.db, running.id)).toBe(false);

    expect(await runOf(sleeping.id)).toMatchObject([{ status: 'waiting', due: true }]);
  });

  describe('retryFailedRun', () => {
    it('queues a failed run again as attempt + 1 at revision + 1, keeping its completed steps and dropping its failed ones', async () => {
      const run = newRun('retries');
      await startClaimed(database.db, run);
      const task = { seq: 0, attempts: 1, error: null, output: 1, status: 'completed' as const };
      await recordTaskResults(
        database.db,
        [
          { runId: run.id, task: { ...task, expectedRevision: 1, key: 'ok#1', name: 'ok' } },
          {
            runId: run.id,
            task: { ...task, expectedRevision: 1, key: 'bad#1', name: 'bad', status: 'failed', output: null, error: { name: 'E', message: 'm' } },
          },
        ],
        { finishing: [], refreshAfterMs: 60_000 },
      );
      await finishRuns(database.db, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'm' } } }]);

      expect(await retryFailedRun(database.db, run.id)).toEqual({ previous: 'failed', applied: true });

      expect(await runOf(run.id)).toEqual([{ status: 'queued', revision: 3, attempt: 2, stalls: 0, due: true }]);
      expect(await database.sql(`SELECT key FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ key: 'ok#1' }]);
      expect(await database.sql(`SELECT from_status, to_status FROM run_transitions WHERE run_id = $1 ORDER BY id DESC LIMIT 1`, [run.id])).toEqual([
        { from_status: 'failed', to_status: 'queued' },
      ]);
    });

    it('applies once of two retries at once: the second waits for the first and finds the run queued', async () => {
      const run = newRun('retries-twice');
      await startClaimed(database.db, run);
      await finishRuns(database.db, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'm' } } }]);

      const first = await holdTransaction(database.db, (tx) => retryFailedRun(tx, run.id));
      const second = retryFailedRun(database.db, run.id);
      await database.someoneWaitsForALock();
      await first.commit();

      expect(first.result).toEqual({ previous: 'failed', applied: true });
      expect(await second).toEqual({ previous: 'queued', applied: false });
      expect(await runOf(run.id)).toMatchObject([{ attempt: 2 }]);
    });

    it('leaves a run that did not fail alone, and answers nothing for an unknown run', async () => {
      const run = newRun('retries-running');
      await startClaimed(database.db, run);

      expect(await retryFailedRun(database.db, run.id)).toEqual({ previous: 'running', applied: false });
      expect(await retryFailedRun(database.db, uuidv7())).toBeUndefined();
    });
  });

  describe('failStalledTakenWith', () => {
    /** A run of `workflow` taken with wake-up w#1 by worker-a. */
    async function takenWithWakeup(workflow: string) {
      const run = newRun(workflow);
      await startRuns(database.db, [run]);
      const [taken] = await claimRunsCommon(database.db, {
        queues: [{ queue: `${workflow}:1`, limit: 1, wakeups: ['w#1'] }],
        limit: 1,
        workerId: 'worker-a',
        buildId: null,
        claimMinIdleTimeMs: 60_000,
        maxStalls: 3,
      });
      expect(taken.id).toBe(run.id);
      return run;
    }
    const failWith = (workflow: string) =>
      failStalledTakenWith(database.db, { queue: `${workflow}:1`, wakeup: 'w#1', claimMinIdleTimeMs: 60_000, message: 'gave up' });

    it('fails as stalled the run last taken with the wake-up once its claim went idle, and announces it', async () => {
      const run = await takenWithWakeup('stalls');
      await database.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [run.id]);

      expect(await failWith('stalls')).toEqual({ id: run.id, failed: true });

      const [failed] = await database.sql(`SELECT status, revision, error FROM runs WHERE id = $1`, [run.id]);
      expect(failed).toEqual({ status: 'failed', revision: 2, error: { name: 'RunStalledError', reason: 'stalled', message: 'gave up' } });
      await eventually('the stalled run announced', async () => finished.payloads.includes(run.id));
    });

    it('leaves a run a live worker holds alone, and finds nothing for a wake-up no running run was taken with', async () => {
      const run = await takenWithWakeup('stalls-live');

      expect(await failWith('stalls-live')).toEqual({ id: run.id, failed: false });
      expect(await failWith('stalls-none')).toEqual({ id: null, failed: false });
      expect(await runOf(run.id)).toMatchObject([{ status: 'running', revision: 1 }]);
    });
  });
});
