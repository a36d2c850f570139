import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { engineSetting, lockEngineSettings, otherCoordinatorSessions, storeIntegerSetting } from './stream-partitions.sql';

describe('stream-partitions.sql', () => {
  let db: SqlTestDatabase;

  beforeAll(async () => {
    db = await createSqlTestDatabase('stream_partitions_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('stores a setting and changes it', async () => {
    expect(await engineSetting(db.db, 'stream_partitions')).toBeUndefined();
    await storeIntegerSetting(db.db, 'stream_partitions', 16);
    expect(await engineSetting(db.db, 'stream_partitions')).toBe(16);
    await storeIntegerSetting(db.db, 'stream_partitions', 4);
    expect(await engineSetting(db.db, 'stream_partitions')).toBe(4);
  });

  it('makes a second coordinator wait for the settings while the first holds them', async () => {
    const first = await holdTransaction(db.db, async (tx) => {
      await lockEngineSettings(tx);
      await storeIntegerSetting(tx, 'stream_partitions', 8);
    });
    const second = db.db.transaction(async (tx) => {
      await lockEngineSettings(tx);
      return engineSetting(tx, 'stream_partitions');
    });
    try {
      await db.someoneWaitsForALock();
    } finally {
      await first.commit();
    }
    // It read the setting once the first had stored it.
    expect(await second).toBe(8);
  });

  it("counts the other coordinators' sessions of this database, not its own", async () => {
    const sessions = ['wf-coordinator other', 'wf-coordinator self', 'wf-worker w1'].map(
      (name) => new Client({ connectionString: db.url, application_name: name }),
    );
    await Promise.all(sessions.map((session) => session.connect()));
    try {
      expect(await otherCoordinatorSessions(db.db, 'wf-coordinator %', 'wf-coordinator self')).toBe(1);
    } finally {
      await Promise.all(sessions.map((session) => session.end()));
    }
  });
});
