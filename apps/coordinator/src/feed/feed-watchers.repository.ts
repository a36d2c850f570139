import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/**
 * `feed_watchers`: which coordinators have a live feed open. The run_transitions_notify trigger announces
 * changes only while some row has not expired (see the dashboard-feed migration).
 */
@Injectable()
export class FeedWatchersRepository {
  constructor(private readonly db: Database) {}

  /** This coordinator watches for `ttlMs` more (an upsert of its own row: coordinators never touch each other's). */
  async watch(coordinator: string, ttlMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO feed_watchers (coordinator, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (coordinator) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
      [coordinator, ttlMs],
    );
  }

  /** This coordinator stopped watching; rows of coordinators that died without saying so are dropped once expired. */
  async unwatch(coordinator: string): Promise<void> {
    await this.db.query(`DELETE FROM feed_watchers WHERE coordinator = $1 OR expires_at < now() - interval '1 hour'`, [coordinator]);
  }
}
