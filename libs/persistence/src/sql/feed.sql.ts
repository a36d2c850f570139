import type { SqlExecutor } from '../database';

/*
 * `feed_watchers`: which coordinators have a live feed open. The run_transitions_notify trigger announces
 * changes only while some row has not expired (see the dashboard-feed migration).
 */

const WATCH_FEED = `INSERT INTO feed_watchers (coordinator, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
  ON CONFLICT (coordinator) DO UPDATE SET expires_at = EXCLUDED.expires_at`;

/**
 * This coordinator watches for `ttlMs` more: an upsert of its own row (coordinators never touch each other's,
 * and ON CONFLICT makes a first watch and a refresh one statement, whichever commits first).
 */
export async function watchFeed(db: SqlExecutor, coordinator: string, ttlMs: number): Promise<void> {
  await db.query(WATCH_FEED, [coordinator, ttlMs]);
}

const UNWATCH_FEED = `DELETE FROM feed_watchers WHERE coordinator = $1 OR expires_at < now() - interval '1 hour'`;

/**
 * This coordinator stopped watching; rows of coordinators that died without saying so are dropped once expired
 * (an hour after). Each coordinator deletes only its own live row: a live one's refreshes keep it from expiring.
 */
export async function unwatchFeed(db: SqlExecutor, coordinator: string): Promise<void> {
  await db.query(UNWATCH_FEED, [coordinator]);
}
