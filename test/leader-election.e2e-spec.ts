import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** Singleton daemons run on one coordinator at a time and fail over when it dies (real processes). */
describe('leader election', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('leader');
  });

  afterAll(async () => {
    await stopAllProcesses();
    await db?.drop();
  });

  it('runs the republish daemon on one coordinator, and moves it when that coordinator is killed', async () => {
    const prefix = testPrefix('leader');
    const start = async (name: string) => {
      const app = new AppProcess(name, 'apps/coordinator/src/main.ts', {
        DATABASE_URL: db.url,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        AUTH_DISABLED: 'true',
        DISPATCH: 'redis-zset',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        LEADER_CHECK_INTERVAL_MS: '200',
      });
      await app.waitForOutput('listening on');
      return app;
    };
    const [a, b] = [await start('coordinator-a'), await start('coordinator-b')];
    const leaders = () => [a, b].filter((app) => app.alive && app.output.includes('leading republish'));
    const [leader] = await eventually('a leader', async () => (leaders().length > 0 ? leaders() : undefined));
    expect(leaders()).toEqual([leader]);
    // The locks behind them: one per singleton daemon (republish, outbox-due, retention), each held by one session.
    const locks = await db.sql<{ holders: number }>(
      `SELECT count(*)::int AS holders FROM pg_locks l JOIN pg_database d ON d.oid = l.database
        WHERE l.locktype = 'advisory' AND l.granted AND d.datname = $1
        GROUP BY l.classid, l.objid`,
      [db.name],
    );
    expect(locks.map((lock) => lock.holders)).toEqual([1, 1, 1]);

    leader.signal('SIGKILL');
    await leader.exited;
    const follower = leader === a ? b : a;
    await follower.waitForOutput('leading republish', 15_000);
    expect(follower.alive).toBe(true);
  }, 60_000);
});
