import { setTimeout } from 'node:timers/promises';
import type { SqlExecutor } from '../database';

/** Any constant shared by every process that migrates this schema. */
export const MIGRATION_LOCK_KEY = 7_311_947_201;

/** Between two tries while another session holds the lock of migrations. */
const LOCK_RETRY_MS = 250;

const TRY_LOCK_MIGRATIONS = `SELECT pg_try_advisory_lock($1) AS locked`;

/**
 * Takes the session-level advisory lock of migrations, trying again every `retryMs` while another session holds
 * it: several coordinators starting at once take turns, and the second one finds nothing left to do. Ending the
 * session (a crash) frees it. It polls rather than waiting in pg_advisory_lock: a statement waiting there keeps a
 * snapshot open, and a migration that builds an index CONCURRENTLY waits for every older snapshot, so the
 * holder's build would wait for the waiter, which waits for the holder's lock. With the lock held by another
 * session than the build's, PostgreSQL saw no cycle and both waited for ever (the hang this fixed); with the
 * migrations on the lock's own session (migration.runner.ts) it would see one and cancel one of the two, perhaps
 * the build. A poll holds its snapshot only for its own short statement.
 */
export async function lockMigrations(session: SqlExecutor, retryMs = LOCK_RETRY_MS): Promise<void> {
  while (!(await session.query<{ locked: boolean }>(TRY_LOCK_MIGRATIONS, [MIGRATION_LOCK_KEY]))[0].locked) {
    await setTimeout(retryMs);
  }
}

const UNLOCK_MIGRATIONS = `SELECT pg_advisory_unlock($1)`;

/** Releases the lock of migrations this session holds. */
export async function unlockMigrations(session: SqlExecutor): Promise<void> {
  await session.query(UNLOCK_MIGRATIONS, [MIGRATION_LOCK_KEY]);
}
