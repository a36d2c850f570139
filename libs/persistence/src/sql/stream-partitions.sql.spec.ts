import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { holdTransaction, withLockTimeout } from '../../../../test/support/held-transaction';
import { createMigratedDatabase, type MigratedDatabase } from '../../../../test/support/migrated-database';
import { engineSetting, lockEngineSettings, otherCoordinatorSessions, storeIntegerSetting } from './stream-partitions.sql';

describe('stream-partitions.sql', () => {
  let db: MigratedDatabase;

  beforeAll(async () => {
    db = await createMigratedDatabase('stream_partitions_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('stores a setting and changes it', async () => {
    expect(await engineSetting(db.database, 'stream_partitions')).toBeUndefined();
    await storeIntegerSetting(db.database, 'stream_partitions', 16);
    expect(await engineSetting(db.database, 'stream_partitions')).toBe(16);
    await storeIntegerSetting(db.database, 'stream_partitions', 4);
    expect(await engineSetting(db.database, 'stream_partitions')).toBe(4);
  });

  it('makes a second coordinator wait for the settings while the first holds them', async () => {
    const first = holdTransaction(db.database, (tx) => lockEngineSettings(tx));
    const second = () => withLockTimeout(db.database, 50, (tx) => lockEngineSettings(tx));
    try {
      await first.started;
      await expect(second()).rejects.toMatchObject({ message: expect.stringContaining('lock timeout') });
      await first.commit();
    } finally {
      await first.release();
    }
    await second();
  });

  it("counts the other coordinators' sessions of this database, not its own", async () => {
    const sessions = ['wf-coordinator other', 'wf-coordinator self', 'wf-worker w1'].map(
      (name) => new Client({ connectionString: db.url, application_name: name }),
    );
    await Promise.all(sessions.map((session) => session.connect()));
    try {
      expect(await otherCoordinatorSessions(db.database, 'wf-coordinator %', 'wf-coordinator self')).toBe(1);
    } finally {
      await Promise.all(sessions.map((session) => session.end()));
    }
  });
});
