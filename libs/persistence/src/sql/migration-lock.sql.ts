import type { SqlExecutor } from '../database';

/** Any constant shared by every process that migrates this schema. */
export const MIGRATION_LOCK_KEY = 7_311_947_201;

const LOCK_MIGRATIONS = `SELECT pg_advisory_lock($1)`;

/**
 * Waits for the session-level advisory lock of migrations and takes it: several coordinators starting at once
 * take turns, and the second one finds nothing left to do. Ending the session (a crash) frees it.
 */
export async function lockMigrations(session: SqlExecutor): Promise<void> {
  await session.query(LOCK_MIGRATIONS, [MIGRATION_LOCK_KEY]);
}

const UNLOCK_MIGRATIONS = `SELECT pg_advisory_unlock($1)`;

/** Releases the lock of migrations this session holds. */
export async function unlockMigrations(session: SqlExecutor): Promise<void> {
  await session.query(UNLOCK_MIGRATIONS, [MIGRATION_LOCK_KEY]);
}
