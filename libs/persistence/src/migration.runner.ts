import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** Any constant shared by every process that migrates this schema. */
const MIGRATION_LOCK_KEY = 7_311_947_201;

/** Resolved once the schema is current: Database depends on it, so no statement runs against an old schema. */
export const SCHEMA_MIGRATED = Symbol('SCHEMA_MIGRATED');

/**
 * Applies pending migrations while the app starts. Several coordinators may start at once, so they
 * take turns on a session-level advisory lock; the second one finds nothing left to do.
 */
export async function migrateSchema(dataSource: DataSource): Promise<true> {
  const logger = new Logger('MigrationRunner');
  const lockHolder = dataSource.createQueryRunner();
  await lockHolder.connect();
  try {
    await lockHolder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    for (const migration of applied) logger.log(`applied migration ${migration.name}`);
  } finally {
    await lockHolder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await lockHolder.release();
  }
  return true;
}
