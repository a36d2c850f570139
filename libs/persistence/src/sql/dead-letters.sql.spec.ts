import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { holdTransaction, withLockTimeout } from '../../../../test/support/held-transaction';
import { createMigratedDatabase, type MigratedDatabase } from '../../../../test/support/migrated-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { uuidv7 } from '../ids';
import { deleteDeadLetter, listDeadLetters, lockDeadLetter, lockRedrivenRun, recordStreamDeadLetter, republishRun } from './dead-letters.sql';

describe('dead-letters.sql', () => {
  let db: MigratedDatabase;
  const letter = { queue: 'echo:1', wakeup: '3-1700000000000-0', deliveries: 6 };

  beforeAll(async () => {
    db = await createMigratedDatabase('dead_letters_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('records a Streams wake-up delivered too often once, however often it is reported', async () => {
    const runId = await insertRun(db);
    const id = await recordStreamDeadLetter(db.database, letter);
    expect(await recordStreamDeadLetter(db.database, { ...letter, runId, deliveries: 7 })).toBe(id);
    expect(await recordStreamDeadLetter(db.database, { ...letter, deliveries: 8 })).toBe(id);
    const [row] = await listDeadLetters(db.database, 10);
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
    const ids = [(await listDeadLetters(db.database, 1))[0].id];
    for (let i = 0; i < 10; i++) ids.push(await recordStreamDeadLetter(db.database, { ...letter, wakeup: `w${i}` }));
    const newestFirst = ids.sort((a, b) => Number(b) - Number(a));
    expect(Number(newestFirst[0])).toBeGreaterThanOrEqual(10); // ids of 1 and 2 digits: as text, '9' > '10'
    expect((await listDeadLetters(db.database, 100)).map((row) => row.id)).toEqual(newestFirst);
    expect((await listDeadLetters(db.database, 2, newestFirst[1])).map((row) => row.id)).toEqual(newestFirst.slice(2, 4));
  });

  it('locks a dead letter until the transaction ends, and deletes it once', async () => {
    const [{ id }] = await listDeadLetters(db.database, 1);
    const holder = holdTransaction(db.database, (tx) => lockDeadLetter(tx, id));
    try {
      expect(await holder.started).toMatchObject({ id });
      await expect(withLockTimeout(db.database, 50, (tx) => deleteDeadLetter(tx, id))).rejects.toMatchObject({
        message: expect.stringContaining('lock timeout'),
      });
      expect(await holder.commit((tx) => deleteDeadLetter(tx, id))).toBe(true);
    } finally {
      await holder.release();
    }
    expect(await deleteDeadLetter(db.database, id)).toBe(false);
    expect(await lockDeadLetter(db.database, id)).toBeUndefined();
  });

  it('locks the redriven run and gives its status and failure reason; a new wake-up goes to its queue', async () => {
    const runId = await insertRun(db, { status: 'failed', error: { reason: 'stalled', message: 'it stalled' }, shard: 'eu' });
    expect(await lockRedrivenRun(db.database, runId)).toEqual({ status: 'failed', reason: 'stalled' });
    expect(await lockRedrivenRun(db.database, uuidv7())).toBeUndefined();
    await republishRun(db.database, runId);
    expect(await db.sql(`SELECT run_id, queue, status FROM outbox`)).toEqual([{ run_id: runId, queue: 'echo:1:eu', status: 'pending' }]);
  });
});
