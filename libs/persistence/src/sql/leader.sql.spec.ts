import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { sessionExecutor } from '../session-executor';
import { probeLockSession, tryAdvisoryLock } from './leader.sql';

describe('leader.sql', () => {
  let db: TestDatabase;
  const open = async () => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    return client;
  };

  beforeAll(async () => {
    db = await createTestDatabase('leader_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('gives a named lock to one session at a time, until that session ends', async () => {
    const [first, second] = [await open(), await open()];
    try {
      expect(await tryAdvisoryLock(sessionExecutor(first), 'retention')).toBe(true);
      expect(await tryAdvisoryLock(sessionExecutor(second), 'retention')).toBe(false);
      expect(await tryAdvisoryLock(sessionExecutor(second), 'republish')).toBe(true);
      expect(await tryAdvisoryLock(sessionExecutor(first), 'retention')).toBe(true); // held already
      await probeLockSession(sessionExecutor(first));
      await first.end();
      expect(await tryAdvisoryLock(sessionExecutor(second), 'retention')).toBe(true);
    } finally {
      await second.end();
    }
  });
});
