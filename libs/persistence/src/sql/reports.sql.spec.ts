import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JsonValue, TaskResultRequest } from '@nest-durable/common';
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
import { finishRuns, lockRunsInOrder, recordTaskResults, releaseRun, retryRunLater } from './reports.sql';
import { lockRunStatus } from './run-commands.sql';
import { insertChildRun } from './runs-start.sql';
import { insertChildStep, lockRunningRun, suspendRun } from './steps.sql';

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

describe("a worker's reports under its claim (reports.sql.ts)", () => {
  let database: SqlTestDatabase;
  let finished: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('reports_sql');
    finished = await listenTo(database.url, 'wf_run_finished');
  });

  afterAll(async () => {
    await finished?.close();
    await database?.close();
  });

  const runOf = (id: string) => database.sql(`SELECT status, revision, attempt, due_at <= now() AS due, output, error FROM runs WHERE id = $1`, [id]);
  const noRefresh = { finishing: [], refreshAfterMs: 3_600_000 };
  const lockWaits = async () => (await database.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`))[0].n;

  describe('recordTaskResults', () => {
    it('inserts each result through its run held at its revision; a stale one is refused and inserts nothing', async () => {
      const [held, stale] = [newRun('records'), newRun('records-stale')];
      await startClaimed(database.db, held);
      await startClaimed(database.db, stale);

      const rows = await recordTaskResults(
        database.db,
        [
          { runId: held.id, task: result('a#1', 1) },
          { runId: stale.id, task: result('a#1', 0) },
        ],
        noRefresh,
      );

      expect(rows).toEqual([
        { owned: true, task: { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 'a#1', error: null } },
        { owned: false, task: null },
      ]);
      expect(await database.sql(`SELECT run_id FROM tasks WHERE key = 'a#1' AND run_id = ANY($1::uuid[])`, [[held.id, stale.id]])).toEqual([
        { run_id: held.id },
      ]);
    });

    it('records a patch marker as a step of kind patch, a task result without a kind as a task', async () => {
      const run = newRun('records-marker');
      await startClaimed(database.db, run);
      const marker: TaskResultRequest = {
        expectedRevision: 1,
        key: 'patch:fee#1',
        seq: 1,
        name: 'fee',
        kind: 'patch',
        status: 'completed',
        attempts: 1,
        output: null,
        error: null,
      };

      const rows = await recordTaskResults(
        database.db,
        [
          { runId: run.id, task: result('a#1', 1) },
          { runId: run.id, task: marker },
        ],
        noRefresh,
      );

      expect(rows.map((row) => row.task?.kind)).toEqual(['task', 'patch']);
      expect(await database.sql(`SELECT key, kind, seq, name FROM tasks WHERE run_id = $1 ORDER BY seq`, [run.id])).toEqual([
        { key: 'a#1', kind: 'task', seq: 0, name: 'a#1' },
        { key: 'patch:fee#1', kind: 'patch', seq: 1, name: 'fee' },
      ]);
    });

    it('keeps the first result of a key when two are recorded at once: the second waits for the first, then finds its key taken', async () => {
      const run = newRun('records-twice');
      await startClaimed(database.db, run);

      const first = await holdTransaction(database.db, (tx) => recordTaskResults(tx, [{ runId: run.id, task: result('k#1', 1, 'first') }], noRefresh));
      const second = recordTaskResults(database.db, [{ runId: run.id, task: result('k#1', 1, 'second') }], noRefresh);
      await database.someoneWaitsForALock();
      await first.commit();

      expect(first.result).toEqual([{ owned: true, task: expect.objectContaining({ output: 'first' }) }]);
      expect(await second).toEqual([{ owned: true, task: null }]);
      expect(await database.sql(`SELECT output FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ output: 'first' }]);
    });

    it('refreshes the claim once its last refresh is older than the refresh age, except of a run whose outcome follows', async () => {
      const [refreshed, finishing] = [newRun('records-refresh'), newRun('records-finishing')];
      await startClaimed(database.db, refreshed);
      await startClaimed(database.db, finishing);
      await database.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 minute' WHERE id = ANY($1::uuid[])`, [[refreshed.id, finishing.id]]);

      await recordTaskResults(
        database.db,
        [
          { runId: refreshed.id, task: result('a#1', 1) },
          { runId: finishing.id, task: result('a#1', 1) },
        ],
        { finishing: [finishing.id], refreshAfterMs: 1_000 },
      );

      const fresh = (id: string) => database.sql(`SELECT heartbeat_at > now() - interval '10 seconds' AS fresh FROM runs WHERE id = $1`, [id]);
      expect(await fresh(refreshed.id)).toEqual([{ fresh: true }]);
      expect(await fresh(finishing.id)).toEqual([{ fresh: false }]);
    });
  });

  describe('finishRuns', () => {
    it('ends a run held at its revision at revision + 1 with its transition, returns it when asked, and announces it', async () => {
      const run = newRun('finishes');
      await startClaimed(database.db, run, 'worker-a', 'build-a');
      await recordTaskResults(database.db, [{ runId: run.id, task: result('a#1', 1) }], noRefresh);

      const [row] = await finishRuns(database.db, [
        { runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: { done: true } }, returnRun: true },
      ]);

      expect(row).toMatchObject({
        finishedRevision: 2,
        finishedWorkflow: 'finishes',
        id: run.id,
        status: 'completed',
        output: { done: true },
        buildId: 'build-a',
        hasSteps: true,
      });
      expect(await runOf(run.id)).toMatchObject([{ status: 'completed', revision: 2, output: { done: true } }]);
      expect(
        await database.sql(`SELECT from_status, to_status, revision, worker_id FROM run_transitions WHERE run_id = $1 ORDER BY id DESC LIMIT 1`, [run.id]),
      ).toEqual([{ from_status: 'running', to_status: 'completed', revision: 2, worker_id: 'worker-a' }]);
      await eventually('the finished run announced', async () => finished.payloads.includes(run.id));
    });

    it('applies only the first of two outcomes for one run and revision, refuses a stale one, and returns no run unless asked', async () => {
      const [run, stale] = [newRun('finishes-twice'), newRun('finishes-stale')];
      await startClaimed(database.db, run);
      await startClaimed(database.db, stale);

      const rows = await finishRuns(database.db, [
        { runId: run.id, expectedRevision: 1, outcome: { status: 'failed', error: { name: 'E', message: 'first' } } },
        { runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 'second' } },
        { runId: stale.id, expectedRevision: 7, outcome: { status: 'completed', output: null } },
      ]);

      expect(rows.map((row) => [row.finishedRevision, row.hasSteps, row.id])).toEqual([
        [2, null, null],
        [null, null, null],
        [null, null, null],
      ]);
      expect(await runOf(run.id)).toMatchObject([{ status: 'failed', error: { name: 'E', message: 'first' } }]);
      expect(await runOf(stale.id)).toMatchObject([{ status: 'running', revision: 1 }]);
    });

    it('lets one of two finishes of a run at once win: the second waits for the first, then finds the run ended', async () => {
      const run = newRun('finishes-race');
      await startClaimed(database.db, run);

      const first = await holdTransaction(database.db, (tx) =>
        finishRuns(tx, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 'first' } }]),
      );
      const second = finishRuns(database.db, [{ runId: run.id, expectedRevision: 1, outcome: { status: 'completed', output: 'second' } }]);
      await database.someoneWaitsForALock();
      await first.commit();

      expect(first.result.map((row) => row.finishedRevision)).toEqual([2]);
      expect((await second).map((row) => row.finishedRevision)).toEqual([null]);
      expect(await runOf(run.id)).toMatchObject([{ revision: 2, output: 'first' }]);
    });

    it("resolves the step of the parent waiting on the run with the child's outcome, and makes the parent due now", async () => {
      const parent = newRun('finishes-parent');
      const child = newRun('finishes-child', { parentId: parent.id });
      await startClaimed(database.db, parent);
      await database.db.transaction(async (tx) => {
        await insertChildRun(tx, child);
        await insertChildStep(tx, { runId: parent.id, key: 'child#1', seq: 0, name: 'child', wait: true, childId: child.id, timeoutMs: null });
        await suspendRun(tx, parent.id, null);
      });
      const [taken] = await claimRunsCommon(database.db, {
        queues: [{ queue: 'finishes-child:1', limit: 1 }],
        limit: 1,
        workerId: 'worker-b',
        buildId: null,
        claimMinIdleTimeMs: 60_000,
        maxStalls: 3,
      });

      await finishRuns(database.db, [{ runId: child.id, expectedRevision: taken.revision, outcome: { status: 'completed', output: 42 } }]);

      expect(await database.sql(`SELECT status, output FROM tasks WHERE run_id = $1`, [parent.id])).toEqual([
        { status: 'completed', output: { timedOut: false, childId: child.id, status: 'completed', output: 42, error: null } },
      ]);
      expect(await runOf(parent.id)).toMatchObject([{ status: 'waiting', due: true }]);
    });

    it('wakes a parent that suspends at the waiting step while the child ends (it waits for the parent to commit)', async () => {
      // The parent is running with its child's step waiting (woken to apply updates, or at a wait group), and
      // suspends there again in a transaction that holds its row while the child's outcome is recorded.
      const parent = newRun('finishes-racing-parent');
      const child = newRun('finishes-racing-child', { parentId: parent.id });
      await startClaimed(database.db, parent);
      await database.db.transaction(async (tx) => {
        await insertChildRun(tx, child);
        await insertChildStep(tx, { runId: parent.id, key: 'child#1', seq: 0, name: 'child', wait: true, childId: child.id, timeoutMs: null });
      });
      const [taken] = await claimRunsCommon(database.db, {
        queues: [{ queue: 'finishes-racing-child:1', limit: 1 }],
        limit: 1,
        workerId: 'worker-b',
        buildId: null,
        claimMinIdleTimeMs: 60_000,
        maxStalls: 3,
      });
      const suspending = await holdTransaction(database.db, async (tx) => {
        await lockRunningRun(tx, parent.id, 1);
        return suspendRun(tx, parent.id, null);
      });

      const finishing = finishRuns(database.db, [{ runId: child.id, expectedRevision: taken.revision, outcome: { status: 'completed', output: 7 } }]);
      await eventually('the child ended, its parent step resolved', async () => {
        const [step] = await database.sql<{ status: string }>(`SELECT status FROM tasks WHERE run_id = $1`, [parent.id]);
        return step.status === 'completed' || (await lockWaits()) > 0;
      });
      await suspending.commit();
      await finishing;

      expect(await runOf(parent.id)).toMatchObject([{ status: 'waiting', due: true }]);
    });
  });

  describe('retryRunLater', () => {
    it('makes a held run wait as attempt + 1 at revision + 1, due after the delay, dropping its failed steps; a stale one is refused', async () => {
      const run = newRun('retries-later');
      await startClaimed(database.db, run);
      await recordTaskResults(
        database.db,
        [
          { runId: run.id, task: result('ok#1', 1) },
          {
            runId: run.id,
            task: { expectedRevision: 1, key: 'bad#1', seq: 1, name: 'bad', status: 'failed', attempts: 1, output: null, error: { name: 'E', message: 'm' } },
          },
        ],
        noRefresh,
      );

      expect(await retryRunLater(database.db, { runId: run.id, expectedRevision: 1, error: { name: 'E', message: 'm' }, delayMs: 3_600_000 })).toEqual({
        revision: 2,
      });
      expect(await retryRunLater(database.db, { runId: run.id, expectedRevision: 1, error: { name: 'E', message: 'm' }, delayMs: 0 })).toBeUndefined();

      expect(await runOf(run.id)).toMatchObject([{ status: 'waiting', revision: 2, attempt: 2, due: false, error: { name: 'E', message: 'm' } }]);
      expect(await database.sql(`SELECT key FROM tasks WHERE run_id = $1`, [run.id])).toEqual([{ key: 'ok#1' }]);
    });
  });

  describe('releaseRun', () => {
    it('gives a held run back, queued and due now at revision + 1; a stale one is refused', async () => {
      const run = newRun('releases');
      await startClaimed(database.db, run);

      expect(await releaseRun(database.db, run.id, 1)).toEqual({ revision: 2 });
      expect(await releaseRun(database.db, run.id, 1)).toBeUndefined();

      expect(await runOf(run.id)).toMatchObject([{ status: 'queued', revision: 2, due: true }]);
      expect(await database.sql(`SELECT from_status, to_status, worker_id FROM run_transitions WHERE run_id = $1 ORDER BY id DESC LIMIT 1`, [run.id])).toEqual([
        { from_status: 'running', to_status: 'queued', worker_id: 'worker-a' },
      ]);
    });
  });

  it("lockRunsInOrder: holds the runs' rows for the caller's transaction", async () => {
    const [a, b] = [newRun('locks-a'), newRun('locks-b')];
    await startClaimed(database.db, a);
    await startClaimed(database.db, b);

    const held = await holdTransaction(database.db, (tx) => lockRunsInOrder(tx, [b.id, a.id]));
    const waiting = database.db.transaction((tx) => lockRunStatus(tx, a.id));
    await database.someoneWaitsForALock();
    await held.commit();

    expect(await waiting).toBe('running');
  });
});
