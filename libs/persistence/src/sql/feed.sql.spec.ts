import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { unwatchFeed, watchFeed } from './feed.sql';

describe('feed.sql', () => {
  let db: SqlTestDatabase;
  const expiry = async (coordinator: string) =>
    (
      await db.sql<{ ms: number }>(`SELECT (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms FROM feed_watchers WHERE coordinator = $1`, [
        coordinator,
      ])
    )[0]?.ms;

  beforeAll(async () => {
    db = await createSqlTestDatabase('feed_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('records a watch and moves its expiry on when it is refreshed', async () => {
    await watchFeed(db.db, 'a', 1_000);
    expect(await expiry('a')).toBeLessThanOrEqual(1_000);
    await watchFeed(db.db, 'a', 60_000);
    expect(await expiry('a')).toBeGreaterThan(59_000);
    expect(await db.sql(`SELECT count(*)::int AS n FROM feed_watchers`)).toEqual([{ n: 1 }]);
  });

  it("drops its own row and the rows expired an hour ago, not another live coordinator's", async () => {
    await watchFeed(db.db, 'mine', 60_000);
    await watchFeed(db.db, 'live', 60_000);
    await watchFeed(db.db, 'expired recently', -60_000);
    await watchFeed(db.db, 'dead', -3_700_000);
    await unwatchFeed(db.db, 'mine');
    const left = await db.sql<{ coordinator: string }>(`SELECT coordinator FROM feed_watchers ORDER BY coordinator`);
    expect(left.map((row) => row.coordinator)).toEqual(['a', 'expired recently', 'live']);
  });
});
