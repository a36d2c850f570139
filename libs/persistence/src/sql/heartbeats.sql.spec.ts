import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, newRun, type SqlTestDatabase, startClaimed } from '../../../../test/support/sql-database';
import { refreshClaims } from './heartbeats.sql';
import { lockRunningRun } from './steps.sql';

describe('refreshClaims', () => {
  let database: SqlTestDatabase;

  beforeAll(async () => {
    database = await createSqlTestDatabase('heartbeats_sql');
  });

  afterAll(async () => {
    await database?.close();
  });

  const lastBeat = async (id: string) =>
    (await database.sql<{ age: number }>(`SELECT extract(epoch FROM now() - heartbeat_at)::float8 AS age FROM runs WHERE id = $1`, [id]))[0].age;
  const age = (id: string) => database.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 minute' WHERE id = $1`, [id]);

  it('refreshes the claims still held at their revision, and returns the runs no longer held', async () => {
    const [held, taken] = [newRun('beats'), newRun('beats-taken')];
    await startClaimed(database.db, held);
    await startClaimed(database.db, taken);
    await age(held.id);

    const lost = await refreshClaims(database.db, [
      { id: held.id, expectedRevision: 1 },
      { id: taken.id, expectedRevision: 0 },
    ]);

    expect(lost).toEqual([taken.id]);
    expect(await lastBeat(held.id)).toBeLessThan(10);
  });

  it('skips a run locked by a write without waiting for it: neither refreshed nor reported lost', async () => {
    const run = newRun('beats-locked');
    await startClaimed(database.db, run);
    await age(run.id);

    const writer = await holdTransaction(database.db, (tx) => lockRunningRun(tx, run.id, 1));
    const lost = await refreshClaims(database.db, [{ id: run.id, expectedRevision: 1 }]);
    await writer.commit();

    expect(lost).toEqual([]);
    expect(await lastBeat(run.id)).toBeGreaterThanOrEqual(60);
  });
});
