import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { SCHEDULE_QUEUE, upcomingDueTimes } from './due-times.sql';

const HOUR = 3_600_000;

describe('due-times.sql', () => {
  let db: SqlTestDatabase;
  const inMs = (ms: number) => new Date(Date.now() + ms);
  const insertSchedule = (id: string, nextRunAt: Date | null) =>
    db.sql(
      `INSERT INTO schedules (id, workflow, version, interval_ms, overlap, catch_up, paused, next_run_at) VALUES ($1, 'echo', '1', 1000, 'allow', 'none', $2, $3)`,
      [id, nextRunAt === null, nextRunAt],
    );

  beforeAll(async () => {
    db = await createSqlTestDatabase('due_times_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('gives the runs due within the horizon and the schedules firing by then, overdue ones too, soonest first', async () => {
    const soon = await insertRun(db, { dueAt: inMs(60_000) });
    const sooner = await insertRun(db, { status: 'waiting', dueAt: inMs(30_000), queue: 'echo:1:eu' });
    await insertRun(db, { dueAt: inMs(2 * HOUR) }); // beyond the horizon
    await insertRun(db, { dueAt: inMs(-1_000) }); // due already: the claims take it, no timer needed
    await insertRun(db, { status: 'waiting', dueAt: 'infinity' }); // waits for an event
    await insertRun(db, { status: 'running', dueAt: inMs(10_000) });
    const overdue = '01900000-0000-7000-8000-000000000001';
    await insertSchedule(overdue, inMs(-5_000));
    await insertSchedule('01900000-0000-7000-8000-000000000002', null); // paused
    await insertSchedule('01900000-0000-7000-8000-000000000003', inMs(2 * HOUR));

    const due = await upcomingDueTimes(db.db, HOUR, 10);
    expect(due.map(({ runId, queue }) => ({ runId, queue }))).toEqual([
      { runId: overdue, queue: SCHEDULE_QUEUE },
      { runId: sooner, queue: 'echo:1:eu' },
      { runId: soon, queue: 'echo:1' },
    ]);
    expect(due[2].at).toBeGreaterThan(Date.now() + 50_000);
    expect(due[2].at).toBeLessThanOrEqual(Date.now() + 60_000);
    // At most `limit`, the soonest.
    expect((await upcomingDueTimes(db.db, HOUR, 2)).map((run) => run.runId)).toEqual([overdue, sooner]);
  });
});
