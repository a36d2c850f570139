import type { SqlExecutor } from '../database';

/*
 * Lock sessions' statements (AdvisoryLockSessions: leader election holds one dedicated session per coordinator).
 * Session-level advisory locks: when the session ends, PostgreSQL frees its locks.
 */

const PROBE_LOCK_SESSION = `SELECT 1`;

/** A round trip on the lock session: an error or no answer means its locks may be gone. */
export async function probeLockSession(session: SqlExecutor): Promise<void> {
  await session.query(PROBE_LOCK_SESSION);
}

const TRY_ADVISORY_LOCK = `SELECT pg_try_advisory_lock(hashtext($1)) AS locked`;

/**
 * Takes the session-level advisory lock named `name` if it is free. Safe under concurrency:
 * pg_try_advisory_lock is atomic across sessions and never waits; a session asking again for a lock it holds
 * gets true (and holds it twice, which ending the session undoes).
 */
export async function tryAdvisoryLock(session: SqlExecutor, name: string): Promise<boolean> {
  const [row] = await session.query<{ locked: boolean }>(TRY_ADVISORY_LOCK, [name]);
  return row.locked;
}
