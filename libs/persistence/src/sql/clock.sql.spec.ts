import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { databaseNow } from './clock.sql';

describe('clock.sql', () => {
  let db: SqlTestDatabase;

  beforeAll(async () => {
    db = await createSqlTestDatabase('clock_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('reads the database clock as it is at the statement, also within a transaction', async () => {
    const [{ before }] = await db.sql<{ before: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS before`);
    const [first, second] = await db.db.transaction(async (tx) => {
      const at = await databaseNow(tx);
      await tx.query(`SELECT pg_sleep(0.005)`);
      return [at, await databaseNow(tx)];
    });
    expect(first).toBeGreaterThanOrEqual(before);
    // now() would give the transaction's start twice.
    expect(second).toBeGreaterThan(first + 4);
  });
});
