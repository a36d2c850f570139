import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type Listener, listenTo, newRun, queuesWokenBefore, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { type HandOffTarget, startHandedPublishedRuns, startHandedRuns } from './runs-hand-off.sql';
import { startRuns } from './runs-start.sql';

/** A claim of worker-h waiting for `queues`. */
const claimFor = (...queues: string[]): HandOffTarget => ({ workerId: 'worker-h', buildId: 'build-h', queues, claimMinIdleTimeMs: 60_000 });

describe('the start statements that hand runs to a waiting claim (runs-hand-off.sql.ts)', () => {
  let database: SqlTestDatabase;
  let ready: Listener;

  beforeAll(async () => {
    database = await createSqlTestDatabase('runs_hand_off_sql', { dispatch: 'redis' });
    ready = await listenTo(database.url, 'wf_runs_ready');
  });

  afterAll(async () => {
    await ready?.close();
    await database?.close();
  });

  describe('startHandedRuns', () => {
    it("inserts a run due now running for the claim's worker at revision 1, its build id recorded, with the transitions of a start and a claim, and wakes nobody", async () => {
      const run = newRun('handed');

      const [started] = await startHandedRuns(database.db, [run], claimFor('handed:1', 'other:1'));

      expect(started).toMatchObject({ id: run.id, status: 'running', revision: 1, claimedBy: 'worker-h', buildId: 'build-h', paused: false });
      expect(await database.sql(`SELECT build_id FROM runs WHERE id = $1`, [run.id])).toEqual([{ build_id: 'build-h' }]);
      expect(started.startedAt).not.toBeNull();
      expect(started.heartbeatAt).not.toBeNull();
      expect(await database.sql(`SELECT from_status, to_status, revision, worker_id FROM run_transitions WHERE run_id = $1 ORDER BY id`, [run.id])).toEqual([
        { from_status: null, to_status: 'queued', revision: 0, worker_id: null },
        { from_status: 'queued', to_status: 'running', revision: 1, worker_id: 'worker-h' },
      ]);
      expect(await queuesWokenBefore(database.db, ready, 'handed-sentinel')).not.toContain('handed:1');
    });

    it("inserts it queued when one of the claim's queues has a ready run (the claim takes that first), or when it is not due yet", async () => {
      await startRuns(database.db, [newRun('queued-first')]);
      const [behind] = await startHandedRuns(database.db, [newRun('handed-behind')], claimFor('handed-behind:1', 'queued-first:1'));
      const [later] = await startHandedRuns(database.db, [newRun('handed-later', { runAt: new Date(Date.now() + 3_600_000) })], claimFor('handed-later:1'));

      expect([behind, later].map((run) => [run.status, run.revision, run.claimedBy, run.buildId])).toEqual([
        ['queued', 0, null, null],
        ['queued', 0, null, null],
      ]);
    });

    it('inserts it queued when its version has an active control', async () => {
      await database.sql(`INSERT INTO workflow_controls (workflow, version, api_concurrency) VALUES ('handed-limited', '1', 5)`);

      const [started] = await startHandedRuns(database.db, [newRun('handed-limited')], claimFor('handed-limited:1'));

      expect(started.status).toBe('queued');
    });
  });

  describe('startHandedPublishedRuns', () => {
    it('writes outbox rows for the runs it queued, none for a run it handed (with its build id)', async () => {
      await startRuns(database.db, [newRun('blocking')]);
      const [handed] = await startHandedPublishedRuns(database.db, [newRun('pub-handed')], claimFor('pub-handed:1'));
      const [queued] = await startHandedPublishedRuns(database.db, [newRun('pub-queued')], claimFor('pub-queued:1', 'blocking:1'));

      expect([handed.status, handed.buildId, handed.outboxId]).toEqual(['running', 'build-h', null]);
      expect([queued.status, queued.buildId]).toEqual(['queued', null]);
      expect(await database.sql(`SELECT id::text, status FROM outbox WHERE run_id = ANY($1::uuid[])`, [[handed.id, queued.id]])).toEqual([
        { id: queued.outboxId, status: 'in_flight' },
      ]);
    });
  });
});
