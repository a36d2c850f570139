import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import {
  claimOutboxBatch,
  deadLetterOutboxRows,
  deleteOutboxRows,
  deleteStaleSentOutboxRows,
  markOutboxRowsSent,
  outboxStats,
  recoverStaleInFlight,
  scheduleOutboxRetries,
} from './outbox.sql';

describe('outbox.sql', () => {
  let db: SqlTestDatabase;
  let runId: string;
  /** Inserts outbox rows (status, seconds until due) and gives their ids in order. */
  const rows = async (...specs: [status: string, dueInSeconds: number][]) => {
    const ids: string[] = [];
    for (const [status, dueIn] of specs) {
      const [{ id }] = await db.sql<{ id: string }>(
        `INSERT INTO outbox (run_id, queue, status, next_attempt_at, updated_at) VALUES ($1, 'echo:1', $2, now() + $3 * interval '1 second', now()) RETURNING id::text`,
        [runId, status, dueIn],
      );
      ids.push(id);
    }
    return ids;
  };
  const statuses = async () => db.sql<{ id: string; status: string }>(`SELECT id::text, status FROM outbox ORDER BY id`);

  beforeAll(async () => {
    db = await createSqlTestDatabase('outbox_sql');
    runId = await insertRun(db);
  });

  beforeEach(async () => {
    await db.sql(`TRUNCATE outbox, dead_letters`);
  });

  afterAll(async () => {
    await db?.close();
  });

  it('claims the due rows, oldest due first, marking them in flight', async () => {
    const [later, earlier, retry, notDue] = await rows(['pending', -1], ['pending', -2], ['retry', -3], ['pending', 60]);
    // The oldest due are taken; RETURNING gives them in no particular order.
    const claimed = (await claimOutboxBatch(db.db, 2)).sort((a, b) => Number(a.id) - Number(b.id));
    expect(claimed).toEqual([
      { id: earlier, runId, queue: 'echo:1', attemptCount: 1 },
      { id: retry, runId, queue: 'echo:1', attemptCount: 1 },
    ]);
    expect((await claimOutboxBatch(db.db, 10)).map((row) => row.id)).toEqual([later]);
    expect(await claimOutboxBatch(db.db, 10)).toEqual([]);
    expect((await statuses()).find((row) => row.id === notDue)?.status).toBe('pending');
  });

  it('gives two enqueuers at once disjoint rows, the second not waiting for the first', async () => {
    const ids = await rows(['pending', -4], ['pending', -3], ['pending', -2], ['pending', -1]);
    const claimedIds = (claimed: { id: string }[]) => claimed.map((row) => row.id).sort((a, b) => Number(a) - Number(b));
    const first = await holdTransaction(db.db, (tx) => claimOutboxBatch(tx, 2));
    try {
      expect(claimedIds(first.result)).toEqual(ids.slice(0, 2));
      // Had it waited for the first's rows, its sessions' lock_timeout would fail it.
      expect(claimedIds(await claimOutboxBatch(db.db, 10))).toEqual(ids.slice(2));
    } finally {
      await first.commit();
    }
    expect(await claimOutboxBatch(db.db, 10)).toEqual([]);
  });

  it('removes sent rows, or marks them sent', async () => {
    const [deleted, marked, other] = await rows(['in_flight', 0], ['in_flight', 0], ['pending', 0]);
    await deleteOutboxRows(db.db, [deleted]);
    await markOutboxRowsSent(db.db, [marked]);
    expect(await statuses()).toEqual([
      { id: marked, status: 'sent' },
      { id: other, status: 'pending' },
    ]);
  });

  it('schedules retries of rows still in flight, each with its delay and error', async () => {
    const [failed, recovered] = await rows(['in_flight', 0], ['retry', 0]);
    await scheduleOutboxRetries(db.db, [
      { id: failed, delayMs: 60_000, error: 'redis down' },
      { id: recovered, delayMs: 60_000, error: 'redis down' },
    ]);
    const after = await db.sql(`SELECT status, last_error, next_attempt_at > now() + interval '50 seconds' AS later FROM outbox ORDER BY id`);
    expect(after).toEqual([
      { status: 'retry', last_error: 'redis down', later: true },
      { status: 'retry', last_error: null, later: false },
    ]);
  });

  it('moves rows out of retries to the dead letters, once', async () => {
    const [dead, alive] = await rows(['in_flight', 0], ['in_flight', 0]);
    await db.sql(`UPDATE outbox SET attempt_count = 5 WHERE id = $1`, [dead]);
    await deadLetterOutboxRows(db.db, [{ id: dead, error: 'gave up' }]);
    await deadLetterOutboxRows(db.db, [{ id: dead, error: 'gave up again' }]);
    expect(await statuses()).toEqual([{ id: alive, status: 'in_flight' }]);
    expect(await db.sql(`SELECT origin, ref, run_id, queue, reason, message, detail FROM dead_letters`)).toEqual([
      { origin: 'outbox', ref: dead, run_id: runId, queue: 'echo:1', reason: 'publish_failed', message: 'gave up', detail: { attempts: 5 } },
    ]);
  });

  it('returns rows left in flight too long to retry, and deletes rows marked sent long ago', async () => {
    const [stale, fresh, oldSent, newSent] = await rows(['in_flight', 0], ['in_flight', 0], ['sent', 0], ['sent', 0]);
    await db.sql(`UPDATE outbox SET updated_at = now() - interval '1 minute' WHERE id = $1`, [stale]);
    await db.sql(`UPDATE outbox SET sent_at = now() - interval '1 minute' WHERE id = $1`, [oldSent]);
    await db.sql(`UPDATE outbox SET sent_at = now() WHERE id = $1`, [newSent]);
    expect(await recoverStaleInFlight(db.db, 30_000)).toBe(1);
    await deleteStaleSentOutboxRows(db.db, 30_000);
    expect(await statuses()).toEqual([
      { id: stale, status: 'retry' },
      { id: fresh, status: 'in_flight' },
      { id: newSent, status: 'sent' },
    ]);
  });

  it('counts the backlog, its age, the rows in flight and the dead letters', async () => {
    expect(await outboxStats(db.db)).toEqual({ backlog: 0, backlogAgeSeconds: 0, inFlight: 0, deadLetters: 0 });
    await rows(['pending', -10], ['retry', -1], ['pending', 60], ['in_flight', 0]);
    await db.sql(`INSERT INTO dead_letters (origin, ref, queue, reason, message) VALUES ('stream', 'x', 'echo:1', 'delivered_too_often', 'm')`);
    const stats = await outboxStats(db.db);
    expect(stats).toMatchObject({ backlog: 2, inFlight: 1, deadLetters: 1 });
    expect(stats.backlogAgeSeconds).toBeGreaterThanOrEqual(10);
  });
});
