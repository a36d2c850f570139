import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../../../../test/support/poll';
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
import { insertChildRun, startPublishedRuns, startRuns } from './runs-start.sql';

describe('the start statements (runs-start.sql.ts)', () => {
  let database: SqlTestDatabase;
  let ready: Listener;

  beforeAll(async () => {
    // A coordinator with a publisher: the published form writes outbox rows only then.
    database = await createSqlTestDatabase('runs_start_sql', { dispatch: 'redis' });
    ready = await listenTo(database.url, 'wf_runs_ready');
  });

  afterAll(async () => {
    await ready?.close();
    await database?.close();
  });

  describe('startRuns', () => {
    it('inserts queued runs with their first transition, returns them, and wakes claimers once per queue with a run due now', async () => {
      const [a, b] = [newRun('starts', { priority: 3, tags: { team: 'x' } }), newRun('starts')];
      const later = newRun('starts-later', { runAt: new Date(Date.now() + 3_600_000) });

      const started = await startRuns(database.db, [a, b, later]);

      expect(started.map((run) => run.id)).toEqual([a.id, b.id, later.id]);
      expect(started[0]).toMatchObject({
        workflow: 'starts',
        version: '1',
        queue: 'starts:1',
        status: 'queued',
        revision: 0,
        attempt: 1,
        priority: 3,
        input: { workflow: 'starts' },
        tags: { team: 'x' },
        idempotencyKey: null,
        parentId: null,
        paused: false,
      });
      expect(await database.sql(`SELECT from_status, to_status, revision FROM run_transitions WHERE run_id = $1`, [a.id])).toEqual([
        { from_status: null, to_status: 'queued', revision: 0 },
      ]);
      const woken = await queuesWokenBefore(database.db, ready, 'starts-sentinel');
      expect(woken.filter((queue) => queue.startsWith('starts'))).toEqual(['starts:1']);
    });

    it('says a run is held by a pause of its version or of its shard', async () => {
      await database.sql(`INSERT INTO workflow_controls (workflow, version, paused_shards) VALUES ('pauses', '1', '{eu}')`);

      const started = await startRuns(database.db, [newRun('pauses', { shard: 'eu' }), newRun('pauses', { shard: 'us' })]);

      expect(started.map((run) => [run.shard, run.paused])).toEqual([
        ['eu', true],
        ['us', false],
      ]);
    });

    it('inserts one run per idempotency key, even when two starts of the key run at once: the second waits for the first and leaves its run out', async () => {
      const first = await holdTransaction(database.db, (tx) => startRuns(tx, [newRun('keyed', { idempotencyKey: 'order-1' })]));
      const second = startRuns(database.db, [newRun('keyed', { idempotencyKey: 'order-1' })]);
      await database.someoneWaitsForALock();
      await first.commit();

      expect(first.result).toHaveLength(1);
      expect(await second).toEqual([]);
      expect(await database.sql(`SELECT id FROM runs WHERE workflow = 'keyed'`)).toEqual([{ id: first.result[0].id }]);
    });
  });

  describe('idempotency keys (idempotency_keys, claimed by the trigger runs_claim_idempotency_key)', () => {
    it("claims each keyed run's key, leaves out a run whose key is taken, also within one batch, and keys per workflow", async () => {
      const first = newRun('keys-a', { idempotencyKey: 'k-1' });
      const [again, sameBatch, otherWorkflow] = [
        newRun('keys-a', { idempotencyKey: 'k-1' }),
        newRun('keys-a', { idempotencyKey: 'k-1' }),
        newRun('keys-b', { idempotencyKey: 'k-1' }),
      ];

      expect((await startRuns(database.db, [first])).map((run) => run.id)).toEqual([first.id]);
      expect((await startRuns(database.db, [again, otherWorkflow, sameBatch])).map((run) => run.id)).toEqual([otherWorkflow.id]);
      expect(await database.sql(`SELECT workflow, run_id FROM idempotency_keys WHERE idempotency_key = 'k-1' ORDER BY workflow`)).toEqual([
        { workflow: 'keys-a', run_id: first.id },
        { workflow: 'keys-b', run_id: otherWorkflow.id },
      ]);
    });

    it('inserts one run for a new key given twice in one batch', async () => {
      const [first, second] = [newRun('keys-twice', { idempotencyKey: 'k-3' }), newRun('keys-twice', { idempotencyKey: 'k-3' })];

      expect((await startRuns(database.db, [first, second])).map((run) => run.id)).toEqual([first.id]);
      expect(await database.sql(`SELECT id FROM runs WHERE workflow = 'keys-twice'`)).toEqual([{ id: first.id }]);
    });

    it('frees a key with its run: deleted through delete_runs, a new start takes it', async () => {
      const [old, next] = [newRun('keys-freed', { idempotencyKey: 'k-2' }), newRun('keys-freed', { idempotencyKey: 'k-2' })];
      await startRuns(database.db, [old]);
      await database.sql(`UPDATE runs SET status = 'completed', finished_at = now() WHERE id = $1`, [old.id]);

      expect(await database.sql(`SELECT delete_runs(ARRAY[$1]::uuid[]) AS id`, [old.id])).toEqual([{ id: old.id }]);

      expect(await database.sql(`SELECT run_id FROM idempotency_keys WHERE workflow = 'keys-freed'`)).toEqual([]);
      expect((await startRuns(database.db, [next])).map((run) => run.id)).toEqual([next.id]);
    });
  });

  describe('startPublishedRuns', () => {
    it("writes its runs' outbox rows: those due now taken (in flight) and returned to publish, the others pending", async () => {
      const [now, later] = [newRun('publishes'), newRun('publishes', { runAt: new Date(Date.now() + 3_600_000) })];

      const started = await startPublishedRuns(database.db, [now, later]);

      const outbox = await database.sql<{ id: string; run_id: string }>(
        `SELECT id::text, run_id, status, attempt_count FROM outbox WHERE run_id = ANY($1::uuid[]) ORDER BY status`,
        [[now.id, later.id]],
      );
      expect(outbox.map(({ id: _, ...row }) => row)).toEqual([
        { run_id: now.id, status: 'in_flight', attempt_count: 1 },
        { run_id: later.id, status: 'pending', attempt_count: 0 },
      ]);
      expect(started.map((run) => [run.id, run.outboxId])).toEqual([
        [now.id, outbox[0].id],
        [later.id, null],
      ]);
    });
  });

  describe('insertChildRun', () => {
    it('inserts a queued child of its parent, with its first transition, and wakes claimers of its queue', async () => {
      const parent = newRun('parents');
      await startClaimed(database.db, parent);
      const child = newRun('children', { parentId: parent.id });

      await database.db.transaction((tx) => insertChildRun(tx, child));

      expect(await database.sql(`SELECT status, revision, parent_id FROM runs WHERE id = $1`, [child.id])).toEqual([
        { status: 'queued', revision: 0, parent_id: parent.id },
      ]);
      expect(await database.sql(`SELECT to_status FROM run_transitions WHERE run_id = $1`, [child.id])).toEqual([{ to_status: 'queued' }]);
      await eventually('the wake-up of children:1', async () => ready.payloads.includes('children:1'));
    });
  });
});
