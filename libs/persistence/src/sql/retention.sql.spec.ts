import type { RegisteredWorkflow } from '@nest-durable/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { deleteExpiredDeadLetters, deleteFinishedRuns, deleteSentOutboxRows, recordDeclaredWindows, tuneRetentionBatch } from './retention.sql';
import { RUN_TABLES } from '../run-tables';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('retention.sql', () => {
  let db: SqlTestDatabase;
  const ago = (ms: number) => new Date(Date.now() - ms);
  const runs = async () => (await db.sql<{ id: string }>(`SELECT id FROM runs ORDER BY id`)).map((row) => row.id);
  const windows = { defaultMs: HOUR, byWorkflow: { brief: MINUTE, kept: 0 } };

  beforeAll(async () => {
    db = await createSqlTestDatabase('retention_sql');
  });

  beforeEach(async () => {
    // TRUNCATE fires no DELETE trigger (runs_delete_guard, run_transitions_append_only): a clean slate per test.
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters, workflows CASCADE`);
  });

  afterAll(async () => {
    await db?.close();
  });

  it('records the windows versions declare in code, writing only what changed', async () => {
    await db.sql(`INSERT INTO workflows (workflow, version) VALUES ('a', '1'), ('b', '1')`);
    const declared: RegisteredWorkflow[] = [
      { name: 'a', version: '1', shards: [], retentionMs: MINUTE },
      { name: 'b', version: '1', shards: [] },
    ];
    await recordDeclaredWindows(db.db, declared);
    const rows = () =>
      db.sql<{ workflow: string; retention_ms: string | null; xmin: string }>(`SELECT workflow, retention_ms, xmin::text FROM workflows ORDER BY workflow`);
    const recorded = await rows();
    expect(recorded.map((row) => [row.workflow, row.retention_ms])).toEqual([
      ['a', '60000'],
      ['b', null],
    ]);
    await recordDeclaredWindows(db.db, declared);
    expect(await rows()).toEqual(recorded);
    await recordDeclaredWindows(db.db, [{ name: 'a', version: '1', shards: [] }]);
    expect((await rows())[0].retention_ms).toBeNull();
  });

  it('deletes the finished runs past their window: the default, a configured one, a declared one; 0 keeps them', async () => {
    await db.sql(`INSERT INTO workflows (workflow, version, retention_ms) VALUES ('declared', '1', 60000)`);
    await insertRun(db, { status: 'completed', finishedAt: ago(2 * HOUR) });
    await insertRun(db, { status: 'failed', finishedAt: ago(2 * HOUR) });
    const recent = await insertRun(db, { status: 'completed', finishedAt: ago(30 * MINUTE) });
    await insertRun(db, { workflow: 'brief', status: 'cancelled', finishedAt: ago(2 * MINUTE) });
    await insertRun(db, { workflow: 'declared', status: 'completed', finishedAt: ago(2 * MINUTE) });
    const kept = await insertRun(db, { workflow: 'kept', status: 'completed', finishedAt: ago(1_000 * HOUR) });
    const unfinished = await insertRun(db, { status: 'queued', createdAt: ago(1_000 * HOUR) });

    // A window configured for a workflow wins over the one its version declares.
    expect((await deleteFinishedRuns(db.db, { defaultMs: 0, byWorkflow: { declared: 0 } }, 10)).deleted).toBe(0);
    expect((await deleteFinishedRuns(db.db, windows, 3)).deleted).toBe(3); // at most a batch
    expect((await deleteFinishedRuns(db.db, windows, 10)).deleted).toBe(1);
    expect(await runs()).toEqual([recent, kept, unfinished].sort());
  });

  it('deletes the oldest first', async () => {
    const finished = [3, 4, 2].map((hours) => insertRun(db, { status: 'completed', finishedAt: ago(hours * HOUR) }));
    const [threeHours, fourHours, twoHours] = await Promise.all(finished);
    expect(await runs()).toEqual([threeHours, fourHours, twoHours].sort());
    expect((await deleteFinishedRuns(db.db, windows, 1)).deleted).toBe(1);
    expect(await runs()).toEqual([threeHours, twoHours].sort());
    expect((await deleteFinishedRuns(db.db, windows, 1)).deleted).toBe(1);
    expect(await runs()).toEqual([twoHours]);
  });

  it('tells how far past its window the most overdue run of the batch was, its own window counted; 0 for an empty batch', async () => {
    await insertRun(db, { status: 'completed', finishedAt: ago(4 * HOUR) });
    await insertRun(db, { status: 'completed', finishedAt: ago(2 * HOUR) });
    await insertRun(db, { workflow: 'brief', status: 'completed', finishedAt: ago(2 * MINUTE) });
    const { overdueSeconds } = await deleteFinishedRuns(db.db, { defaultMs: HOUR, byWorkflow: { brief: MINUTE } }, 10);
    // The four-hour-old run under the default window of an hour: three hours overdue (give or take this test's own time).
    expect(overdueSeconds).toBeGreaterThan(3 * 3_600 - 60);
    expect(overdueSeconds).toBeLessThan(3 * 3_600 + 60);
    expect(await deleteFinishedRuns(db.db, windows, 10)).toEqual({ deleted: 0, overdueSeconds: 0 });
    await insertRun(db, { workflow: 'brief', status: 'completed', finishedAt: ago(3 * MINUTE) });
    const brief = await deleteFinishedRuns(db.db, windows, 10);
    expect(brief.overdueSeconds).toBeGreaterThan(2 * 60 - 30);
    expect(brief.overdueSeconds).toBeLessThan(2 * 60 + 30);
  });

  it('keeps a finished run while its parent or one of its children is unfinished', async () => {
    const parent = await insertRun(db, { status: 'running' });
    const child = await insertRun(db, { status: 'completed', finishedAt: ago(2 * HOUR), parentId: parent });
    const finishedParent = await insertRun(db, { status: 'completed', finishedAt: ago(2 * HOUR) });
    const runningChild = await insertRun(db, { status: 'running', parentId: finishedParent });
    expect((await deleteFinishedRuns(db.db, windows, 10)).deleted).toBe(0);
    expect(await runs()).toEqual([parent, child, finishedParent, runningChild].sort());
  });

  it('skips a run another transaction holds, without waiting for it', async () => {
    const held = await insertRun(db, { status: 'completed', finishedAt: ago(3 * HOUR) });
    const free = await insertRun(db, { status: 'completed', finishedAt: ago(2 * HOUR) });
    const holder = await holdTransaction(db.db, (tx) => tx.query(`SELECT id FROM runs WHERE id = $1 FOR UPDATE`, [held]));
    try {
      // Had it waited for the held run, its sessions' lock_timeout would fail it.
      expect((await deleteFinishedRuns(db.db, windows, 10)).deleted).toBe(1);
    } finally {
      await holder.commit();
    }
    expect(await runs()).toEqual([held]);
    expect(free).not.toBe(held);
  });

  it('deletes sent outbox rows past the window, never those still to publish', async () => {
    const runId = await insertRun(db);
    await db.sql(
      `INSERT INTO outbox (run_id, queue, status, sent_at) VALUES
         ($1, 'echo:1', 'sent', now() - interval '3 hours'), ($1, 'echo:1', 'sent', now() - interval '2 hours'),
         ($1, 'echo:1', 'sent', now() - interval '1 minute'), ($1, 'echo:1', 'pending', NULL), ($1, 'echo:1', 'in_flight', NULL)`,
      [runId],
    );
    expect(await deleteSentOutboxRows(db.db, HOUR, 1)).toBe(1);
    expect(await deleteSentOutboxRows(db.db, HOUR, 10)).toBe(1);
    expect(await db.sql(`SELECT status FROM outbox ORDER BY id`)).toEqual([{ status: 'sent' }, { status: 'pending' }, { status: 'in_flight' }]);
  });

  it("deletes dead letters past the window of their queue's workflow", async () => {
    await db.sql(`INSERT INTO workflows (workflow, version, retention_ms) VALUES ('declared', '2', 60000)`);
    await db.sql(
      `INSERT INTO dead_letters (origin, ref, queue, reason, message, created_at) VALUES
         ('outbox', '1', 'echo:1', 'publish_failed', 'x', now() - interval '2 hours'),
         ('outbox', '2', 'echo:1', 'publish_failed', 'x', now() - interval '30 minutes'),
         ('outbox', '3', 'brief:1:eu', 'publish_failed', 'x', now() - interval '2 minutes'),
         ('outbox', '4', 'declared:2', 'publish_failed', 'x', now() - interval '2 minutes'),
         ('outbox', '5', 'kept:1', 'publish_failed', 'x', now() - interval '1000 hours')`,
    );
    expect(await deleteExpiredDeadLetters(db.db, windows, 10)).toBe(3);
    expect(await db.sql(`SELECT ref FROM dead_letters ORDER BY ref`)).toEqual([{ ref: '2' }, { ref: '5' }]);
  });

  it("tunes a batch's transaction only", async () => {
    const settings = `SELECT current_setting('jit') AS jit, current_setting('synchronous_commit') AS commit`;
    const inside = await db.db.transaction(async (tx) => {
      await tuneRetentionBatch(tx);
      return tx.query(settings);
    });
    expect(inside).toEqual([{ jit: 'off', commit: 'off' }]);
    expect(await db.db.query(settings)).not.toEqual(inside);
  });
});
