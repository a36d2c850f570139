import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { uuidv7 } from '../ids';
import { deleteDeadLetter, listDeadLetters, lockDeadLetter, lockRedrivenRun, recordStreamDeadLetter, republishRun } from './dead-letters.sql';

describe('dead-letters.sql', () => {
  let db: SqlTestDatabase;
  const letter = { queue: 'echo:1', wakeup: '3-1700000000000-0', deliveries: 6 };

  beforeAll(async () => {
    db = await createSqlTestDatabase('dead_letters_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('records a Streams wake-up delivered too often once, however often it is reported', async () => {
    const runId = await insertRun(db);
    const id = await recordStreamDeadLetter(db.db, letter);
    expect(await recordStreamDeadLetter(db.db, { ...letter, runId, deliveries: 7 })).toBe(id);
    expect(await recordStreamDeadLetter(db.db, { ...letter, deliveries: 8 })).toBe(id);
    const [row] = await listDeadLetters(db.db, 10);
    expect(row).toMatchObject({
      id,
      origin: 'stream',
      runId,
      queue: 'echo:1',
      reason: 'delivered_too_often',
      message: 'the wake-up was delivered 6 times: the workers that took it stopped without finishing',
      detail: { wakeup: letter.wakeup, deliveries: 8 },
    });
    expect(row.createdAt).toBeInstanceOf(Date);
  });

  it('lists newest first by id as a number, a page after a cursor', async () => {
    const ids = [(await listDeadLetters(db.db, 1))[0].id];
    for (let i = 0; i < 10; i++) ids.push(await recordStreamDeadLetter(db.db, { ...letter, wakeup: `w${i}` }));
    const newestFirst = ids.sort((a, b) => Number(b) - Number(a));
    expect(Number(newestFirst[0])).toBeGreaterThanOrEqual(10); // ids of 1 and 2 digits: as text, '9' > '10'
    expect((await listDeadLetters(db.db, 100)).map((row) => row.id)).toEqual(newestFirst);
    expect((await listDeadLetters(db.db, 2, newestFirst[1])).map((row) => row.id)).toEqual(newestFirst.slice(2, 4));
  });

  it('locks a dead letter until the transaction ends: a delete meanwhile waits, and finds it gone', async () => {
    const [{ id }] = await listDeadLetters(db.db, 1);
    // A redrive: it locks the dead letter, and deletes it in the same transaction.
    const redrive = await holdTransaction(db.db, async (tx) => (await lockDeadLetter(tx, id)) && (await deleteDeadLetter(tx, id)));
    const deleting = deleteDeadLetter(db.db, id);
    try {
      expect(redrive.result).toBe(true);
      await db.someoneWaitsForALock();
    } finally {
      await redrive.commit();
    }
    expect(await deleting).toBe(false);
    expect(await lockDeadLetter(db.db, id)).toBeUndefined();
  });

  it('locks the redriven run and gives its status and failure reason; a new wake-up goes to its queue', async () => {
    const runId = await insertRun(db, { status: 'failed', error: { reason: 'stalled', message: 'it stalled' }, shard: 'eu' });
    expect(await lockRedrivenRun(db.db, runId)).toEqual({ status: 'failed', reason: 'stalled' });
    expect(await lockRedrivenRun(db.db, uuidv7())).toBeUndefined();
    await republishRun(db.db, runId);
    expect(await db.sql(`SELECT run_id, queue, status FROM outbox`)).toEqual([{ run_id: runId, queue: 'echo:1:eu', status: 'pending' }]);
  });
});
