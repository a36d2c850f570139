import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LeaderElection } from '@app/locking';
import { RUN_TABLES } from '@app/persistence';
import request from 'supertest';
import { RunWeeksDaemon, WEEKS_AHEAD_MS } from '../apps/coordinator/src/run-weeks/run-weeks.daemon';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import type { TestDatabase } from './support/database';
import { createMigratedDatabase } from './support/migrated-database';
import { eventually } from './support/poll';
import { insertRun } from './support/seed-rows';

const DAY = 86_400_000;

/**
 * The run tables' weekly partitions against real PostgreSQL: a run id past the last week made cannot be inserted
 * (there is no default partition), so the coordinator leading `run-weeks` makes them weeks ahead.
 */
describe("the run tables' weeks", () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  /** Where the last week of each run table ends. */
  const weeksEnd = async () =>
    db.sql<{ table: string; end: Date }>(`SELECT t::text AS table, run_weeks_end(t) AS end FROM unnest($1::regclass[]) AS t ORDER BY 1`, [RUN_TABLES]);

  beforeAll(async () => {
    db = await createMigratedDatabase('run_weeks');
    // The last week of each table gone (detached and dropped, empty), as if the database had been migrated a week ago:
    // the coordinator that takes the lead must make it again.
    for (const { table } of await weeksEnd()) {
      const [{ week }] = await db.sql<{ week: string }>(
        `SELECT c.relname AS week FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE inhparent = $1::regclass ORDER BY c.relname DESC LIMIT 1`,
        [table],
      );
      await db.sql(`ALTER TABLE ${table} DETACH PARTITION ${week}`);
      await db.sql(`DROP TABLE ${week}`);
    }
    expect((await weeksEnd()).every(({ end }) => end.getTime() < Date.now() + WEEKS_AHEAD_MS)).toBe(true);
    coordinator = await startCoordinator(db.url, { leaderCheckIntervalMs: 100 });
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  it('are made four weeks ahead by the coordinator that takes the lead', async () => {
    await eventually('the coordinator to lead run-weeks', async () => coordinator.app.get(LeaderElection).leading.includes('run-weeks'));
    await coordinator.app.get(RunWeeksDaemon).idle();
    const ends = await weeksEnd();
    expect(ends.map(({ table }) => table)).toEqual([...RUN_TABLES].sort());
    for (const { end } of ends) expect(end.getTime()).toBeGreaterThan(Date.now() + WEEKS_AHEAD_MS);
    const metrics = (await request(coordinator.url).get('/metrics').expect(200)).text;
    const ahead = Number(/^wf_run_weeks_ahead_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(ahead).toBeGreaterThan(WEEKS_AHEAD_MS / 1000);
    expect(ahead).toBeLessThan((WEEKS_AHEAD_MS + 8 * DAY) / 1000);
  });

  it('are made once when two rounds make the same weeks at once (a coordinator taking the lead as another lets go)', async () => {
    const daemon = coordinator.app.get(RunWeeksDaemon);
    const tenWeeksOn = Date.now() + 10 * 7 * DAY;
    const made = await Promise.all([daemon.round(tenWeeksOn), daemon.round(tenWeeksOn)]);
    expect(made[0] + made[1]).toBeGreaterThan(0);
    expect(await daemon.round(tenWeeksOn)).toBe(0);
    for (const { end } of await weeksEnd()) expect(end.getTime()).toBeGreaterThan(tenWeeksOn + WEEKS_AHEAD_MS);
  });

  it('refuse a run id past the last week; a round through a later date makes its week, as its table is (indexes, row triggers)', async () => {
    const later = new Date(Date.now() + WEEKS_AHEAD_MS + 20 * 7 * DAY);
    await expect(insertRun(db, { createdAt: later })).rejects.toThrow(/no partition of relation "runs" found for row/);

    expect(await coordinator.app.get(RunWeeksDaemon).round(later.getTime() - WEEKS_AHEAD_MS)).toBeGreaterThan(0);
    const id = await insertRun(db, { createdAt: later, status: 'completed' });
    await db.sql(`INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts) VALUES ($1, 'step#1', 'task', 0, 'step', 'completed', 1)`, [id]);
    const [{ week }] = await db.sql<{ week: string }>(`SELECT tableoid::regclass::text AS week FROM runs WHERE id = $1`, [id]);
    expect(week).toMatch(/^runs_w\d{8}$/);
    const shape = (partition: string) =>
      db.sql<{ indexes: number; triggers: number }>(
        `SELECT (SELECT count(*)::int FROM pg_index WHERE indrelid = $1::regclass) AS indexes,
                (SELECT count(*)::int FROM pg_trigger WHERE tgrelid = $1::regclass) AS triggers`,
        [partition],
      );
    expect(await shape(week)).toEqual(await shape('runs_initial'));
    // Its runs go with retention as any other's.
    expect(await db.sql(`SELECT delete_runs($1::uuid[]) AS id`, [[id]])).toEqual([{ id }]);
    expect(await db.sql(`SELECT 1 FROM tasks WHERE run_id = $1`, [id])).toEqual([]);
  });
});
