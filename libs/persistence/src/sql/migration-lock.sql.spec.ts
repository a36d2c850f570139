import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { eventually } from '../../../../test/support/poll';
import type { SqlExecutor } from '../database';
import { sessionExecutor } from '../session-executor';
import { lockMigrations, unlockMigrations } from './migration-lock.sql';

describe('migration-lock.sql', () => {
  let db: TestDatabase;
  let first: Client;
  let second: Client;

  beforeAll(async () => {
    db = await createTestDatabase('migration_lock_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  beforeEach(async () => {
    [first, second] = [new Client({ connectionString: db.url }), new Client({ connectionString: db.url })];
    await Promise.all([first.connect(), second.connect()]);
  });

  afterEach(async () => {
    await Promise.all([first.end(), second.end()]);
  });

  /** The second session's executor, counting its statements: each is a try for the lock. */
  function countingTries(client: Client): { executor: SqlExecutor; tries: () => number } {
    let tries = 0;
    const executor = sessionExecutor(client);
    return {
      executor: {
        query: (statement, values) => {
          tries++;
          return executor.query(statement, values);
        },
      },
      tries: () => tries,
    };
  }

  it('makes a second migrating session wait until the first unlocks', async () => {
    await lockMigrations(sessionExecutor(first));
    const { executor, tries } = countingTries(second);
    let locked = false;
    const waiting = lockMigrations(executor, 10).then(() => (locked = true));
    await eventually('the second session to try three times', async () => tries() >= 3);
    expect(locked).toBe(false);

    await unlockMigrations(sessionExecutor(first));
    await waiting;
    await unlockMigrations(executor);
  });

  it('lets the holder build an index CONCURRENTLY while another session waits for the lock', async () => {
    await first.query(`CREATE TABLE concurrent_build (n integer)`);
    await lockMigrations(sessionExecutor(first));
    const { executor, tries } = countingTries(second);
    const secondPid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const waiting = lockMigrations(executor, 10);
    // Waiting either way: between tries, or inside PostgreSQL (the old pg_advisory_lock, which this build would wait for).
    await eventually('the second session to wait', async () => {
      const { rows } = await first.query(`SELECT wait_event_type = 'Lock' AS blocked FROM pg_stat_activity WHERE pid = $1`, [secondPid]);
      return tries() >= 3 || rows[0]?.blocked === true;
    });

    // On a session of its own, as migration.runner.ts runs the migrations beside its lock's session. The build
    // waits for every older snapshot: one held by a session waiting in pg_advisory_lock would hang it for ever.
    const migrating = new Client({ connectionString: db.url });
    await migrating.connect();
    try {
      await migrating.query(`CREATE INDEX CONCURRENTLY concurrent_build_n_idx ON concurrent_build (n)`);
    } finally {
      await migrating.end();
    }

    await unlockMigrations(sessionExecutor(first));
    await waiting;
    await unlockMigrations(executor);
  });
});
