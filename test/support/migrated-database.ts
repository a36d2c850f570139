import { Database, GenericPlanPool, MIGRATIONS } from '@app/persistence';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from './database';

/** A throwaway database with the schema as the migrations leave it, and the engine's own Database on it. */
export interface MigratedDatabase extends TestDatabase {
  /** Runs statements as the coordinator does (its pool, prepared statements, generic plans, transactions). */
  database: Database;
}

export interface MigratedDatabaseOptions {
  /** The sessions' `wf.dispatch` (see PersistenceOptions): 'none' writes no outbox rows, a publisher's name does. */
  dispatch?: string;
}

/**
 * Creates a database (createTestDatabase), applies libs/persistence's MIGRATIONS to it, and opens a Database
 * on it, for tests of statements against real PostgreSQL. `drop()` closes the pools and drops the database.
 */
export async function createMigratedDatabase(suite: string, { dispatch = 'none' }: MigratedDatabaseOptions = {}): Promise<MigratedDatabase> {
  const db = await createTestDatabase(suite);
  const options = `-c wf.dispatch=${dispatch}`;
  const dataSource = new DataSource({ type: 'postgres', url: db.url, migrations: MIGRATIONS, extra: { max: 4, options } });
  const genericPlans = new GenericPlanPool({ connectionString: db.url, max: 2, options }, () => undefined);
  try {
    await dataSource.initialize();
    await dataSource.runMigrations({ transaction: 'each' });
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    await genericPlans.onApplicationShutdown();
    await db.drop();
    throw error;
  }
  return {
    ...db,
    database: new Database(dataSource, genericPlans, true),
    async drop() {
      await dataSource.destroy();
      await genericPlans.onApplicationShutdown();
      await db.drop();
    },
  };
}
