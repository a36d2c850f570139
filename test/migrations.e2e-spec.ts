import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MIGRATIONS } from '@app/persistence';
import { DataSource } from 'typeorm';
import { RunShardAndHistoryGuard1764700000000 } from '../libs/persistence/src/migrations/1764700000000-run-shard-and-history-guard';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';

/** Migrations applied to a database that already holds runs (an upgrade, not a fresh install). */
describe('schema migrations on existing data', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator | undefined;

  beforeAll(async () => {
    db = await createTestDatabase('migrations');
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  it('gives runs started before the shard column the shard of their queue name', async () => {
    const before = MIGRATIONS.slice(0, MIGRATIONS.indexOf(RunShardAndHistoryGuard1764700000000));
    const previous = new DataSource({ type: 'postgres', url: db.url, migrations: before });
    await previous.initialize();
    try {
      await previous.runMigrations();
      await previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES
        ('01a22c37-316c-762f-a717-000000000001', 'echo', '1', 'echo:1:eu-west', 'queued'),
        ('01a22c37-316c-762f-a717-000000000002', 'echo', '1', 'echo:1', 'queued')`);
    } finally {
      await previous.destroy();
    }

    coordinator = await startCoordinator(db.url);
    expect(await db.sql('SELECT queue, shard FROM runs ORDER BY id')).toEqual([
      { queue: 'echo:1:eu-west', shard: 'eu-west' },
      { queue: 'echo:1', shard: null },
    ]);
  });
});
