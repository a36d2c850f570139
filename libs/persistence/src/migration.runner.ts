import { Logger } from '@nestjs/common';
import { type DataSource, MigrationExecutor } from 'typeorm';
import type { SqlExecutor } from './database';
import { lockMigrations, unlockMigrations } from './sql/migration-lock.sql';

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
  // The query runner's session, as an executor of the lock's statements (plain text: none is prepared).
  const session: SqlExecutor = { query: (statement, values) => lockHolder.query(typeof statement === 'string' ? statement : statement.text, values) };
  try {
    await lockMigrations(session);
    // On the lock's own session. A coordinator killed while a migration builds an index CONCURRENTLY leaves the
    // build running on the server (it ends only when it finds its client gone, at its result, unless the server
    // checks clients during statements: client_connection_check_interval, off by default); on this session the
    // lock stays held until then, so the next coordinator finds the index built, not a build in progress that
    // looks failed (invalid) and is dropped and built again (migrations/keyed-by-run.ts).
    const executor = new MigrationExecutor(dataSource, lockHolder);
    executor.transaction = 'each';
    const applied = await executor.executePendingMigrations();
    for (const migration of applied) logger.log(`applied migration ${migration.name}`);
  } finally {
    // A migration that failed inside a transaction of its own (one with `transaction = false` may open one) would
    // leave it aborted, and the unlock refused: this session goes back to the pool, so it must not keep the lock.
    // Rolled back only then (a ROLLBACK outside a transaction is a warning in the server's log at every start).
    await unlockMigrations(session)
      .catch(async () => {
        await lockHolder.query('ROLLBACK');
        await unlockMigrations(session);
      })
      .catch(() => undefined);
    await lockHolder.release();
  }
  return true;
}
