import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { sessionExecutor } from '../session-executor';
import { lockMigrations, unlockMigrations } from './migration-lock.sql';

describe('migration-lock.sql', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('migration_lock_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('makes a second migrating session wait until the first unlocks', async () => {
    const [first, second] = [new Client({ connectionString: db.url }), new Client({ connectionString: db.url })];
    await Promise.all([first.connect(), second.connect()]);
    try {
      await lockMigrations(sessionExecutor(first));
      await second.query(`SET lock_timeout = '50ms'`);
      await expect(lockMigrations(sessionExecutor(second))).rejects.toMatchObject({ message: expect.stringContaining('lock timeout') });
      await unlockMigrations(sessionExecutor(first));
      await lockMigrations(sessionExecutor(second));
      await unlockMigrations(sessionExecutor(second));
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
  });
});
