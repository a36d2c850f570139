import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { dispatchBacklog, queueDepths, runsSince, throughputSince } from './stats.sql';

const MINUTE = 60_000;

describe('stats.sql', () => {
  let db: SqlTestDatabase;
  const minute = (ms: number) => new Date(Math.floor(ms / MINUTE) * MINUTE);
  const now = Date.now();
  const since = minute(now - 10 * MINUTE);

  beforeAll(async () => {
    db = await createSqlTestDatabase('stats_sql');
    await insertRun(db, { createdAt: new Date(now - 60 * MINUTE), status: 'completed', finishedAt: new Date(now - 3 * MINUTE) });
    await insertRun(db, { createdAt: new Date(now - 5 * MINUTE), status: 'completed', finishedAt: new Date(now - 3 * MINUTE) });
    await insertRun(db, { createdAt: new Date(now - 5 * MINUTE), status: 'queued', dueAt: new Date(now - 4 * MINUTE) });
    await insertRun(db, { createdAt: new Date(now - 2 * MINUTE), status: 'queued', dueAt: new Date(now + 60 * MINUTE) });
    await insertRun(db, { createdAt: new Date(now - 2 * MINUTE), workflow: 'mail', shard: 'eu', status: 'running' });
    await insertRun(db, { createdAt: new Date(now - 2 * MINUTE), workflow: 'mail', shard: 'eu', status: 'waiting', dueAt: 'infinity' });
  });

  afterAll(async () => {
    await db?.close();
  });

  it('counts the runs created since a time by workflow, version and status (an old run is not counted)', async () => {
    expect(await runsSince(db.db, since)).toEqual([
      { workflow: 'echo', version: '1', status: 'completed', count: 1 },
      { workflow: 'echo', version: '1', status: 'queued', count: 2 },
      { workflow: 'mail', version: '1', status: 'running', count: 1 },
      { workflow: 'mail', version: '1', status: 'waiting', count: 1 },
    ]);
  });

  it('counts runs created and ended per minute, only the minutes with any', async () => {
    const counts = await throughputSince(db.db, since);
    const byMinute = Object.fromEntries(counts.map((count) => [count.minute.getTime(), [count.started, count.finished]]));
    expect(byMinute).toEqual({
      [minute(now - 5 * MINUTE).getTime()]: [2, 0],
      [minute(now - 3 * MINUTE).getTime()]: [0, 2],
      [minute(now - 2 * MINUTE).getTime()]: [3, 0],
    });
  });

  it('gives the depth of every queue with unfinished runs', async () => {
    const depths = await queueDepths(db.db);
    expect(depths.map(({ oldestReadyAgeMs, ...depth }) => depth)).toEqual([
      { queue: 'echo:1', workflow: 'echo', version: '1', shard: null, ready: 1, delayed: 1, running: 0, waiting: 0 },
      { queue: 'mail:1:eu', workflow: 'mail', version: '1', shard: 'eu', ready: 0, delayed: 0, running: 1, waiting: 1 },
    ]);
    expect(depths[0].oldestReadyAgeMs).toBeGreaterThanOrEqual(4 * MINUTE);
    expect(depths[1].oldestReadyAgeMs).toBeNull();
  });

  it("counts the outbox's due wake-ups, the oldest one's age, and the dead letters", async () => {
    expect(await dispatchBacklog(db.db)).toEqual({ backlog: 0, oldestAgeMs: null, deadLetters: 0 });
    const [{ id: runId }] = await db.sql<{ id: string }>(`SELECT id FROM runs LIMIT 1`);
    await db.sql(`INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES ($1, 'echo:1', now() - interval '2 seconds'), ($1, 'echo:1', now())`, [runId]);
    await db.sql(`INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES ($1, 'echo:1', now() + interval '1 hour')`, [runId]);
    await db.sql(`INSERT INTO outbox (run_id, queue, status) VALUES ($1, 'echo:1', 'in_flight')`, [runId]);
    await db.sql(`INSERT INTO dead_letters (origin, ref, queue, reason, message) VALUES ('outbox', '1', 'echo:1', 'publish_failed', 'no')`);
    const backlog = await dispatchBacklog(db.db);
    expect(backlog).toMatchObject({ backlog: 2, deadLetters: 1 });
    expect(backlog.oldestAgeMs).toBeGreaterThanOrEqual(2_000);
  });
});
