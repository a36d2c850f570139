import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createMigratedDatabase, migrate } from '../../../../test/support/migrated-database';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { eventually } from '../../../../test/support/poll';
import { insertRun } from '../../../../test/support/seed-rows';
import type { SqlExecutor } from '../database';
import { uuidv7 } from '../ids';
import { databaseNow } from './clock.sql';
import { advanceTestClockTo, announceDueRuns, installTestClock, nextDueTime, unsettledWork } from './test-clock.sql';

const DAY = 86_400_000;

function executor(client: Client): SqlExecutor & Pick<TestDatabase, 'sql'> {
  const query = async <T>(text: unknown, values?: unknown[]) => (await client.query(text as string, values)).rows as T[];
  return { query, sql: query };
}

async function session(url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  await client.connect();
  return client;
}

describe('test-clock.sql', () => {
  let db: TestDatabase;
  let clocked: Client;
  let sql: ReturnType<typeof executor>;

  beforeAll(async () => {
    db = await createTestDatabase('test_clock_sql');
    const installer = await session(db.url);
    await installTestClock(executor(installer));
    await installer.end();
    // Migrated after the install, as the test kit does: defaults and trigger conditions bind the clock's now().
    await migrate(db.url);
    clocked = await session(db.url);
    sql = executor(clocked);
  }, 60_000);

  afterAll(async () => {
    await clocked?.end();
    await db?.drop();
  });

  it('moves now(), clock_timestamp(), column defaults and PL/pgSQL functions of new sessions forward, never back', async () => {
    const real = async () => Number((await sql.query<{ at: number }>(`SELECT extract(epoch FROM pg_catalog.clock_timestamp()) * 1000 AS at`))[0].at);
    expect(Math.abs((await databaseNow(sql)) - (await real()))).toBeLessThan(1_000);

    const moved = await advanceTestClockTo(sql, (await real()) + 2 * DAY);
    expect(moved - (await real())).toBeGreaterThan(2 * DAY - 1_000);
    expect((await databaseNow(sql)) - (await real())).toBeGreaterThan(2 * DAY - 1_000);
    const [{ now }] = await sql.query<{ now: Date }>(`SELECT now() AS now`);
    expect(now.getTime() - (await real())).toBeGreaterThan(2 * DAY - 1_000);

    // The engine's own: a run's created_at default, and a PL/pgSQL function that reads now() (made here as the
    // migrations make theirs).
    const id = await insertRun(sql, { status: 'completed' });
    await sql.query(`UPDATE runs SET created_at = DEFAULT WHERE id = $1`, [id]);
    const [run] = await sql.query<{ created: Date }>(`SELECT created_at AS created FROM runs WHERE id = $1`, [id]);
    expect(run.created.getTime() - (await real())).toBeGreaterThan(2 * DAY - 1_000);
    await sql.query(`CREATE FUNCTION clock_probe() RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RETURN now(); END $$`);
    const [{ probe }] = await sql.query<{ probe: Date }>(`SELECT clock_probe() AS probe`);
    expect(probe.getTime() - (await real())).toBeGreaterThan(2 * DAY - 1_000);

    // Back is refused: the clock stays where it was.
    const kept = await advanceTestClockTo(sql, 0);
    expect(kept).toBeGreaterThanOrEqual(moved);
  });

  it('finds the next due time of runs, and the runs not yet handed on', async () => {
    const wakeAt = Math.ceil(await databaseNow(sql)) + DAY;
    expect(await nextDueTime(sql)).toBeNull();
    const sleeping = await insertRun(sql, { status: 'waiting', dueAt: new Date(wakeAt) });
    await insertRun(sql, { status: 'waiting', dueAt: 'infinity' });
    expect(await nextDueTime(sql)).toBe(wakeAt);
    expect(await unsettledWork(sql, 5)).toEqual([]);

    await advanceTestClockTo(sql, wakeAt);
    expect(await nextDueTime(sql)).toBeNull();
    expect(await unsettledWork(sql, 5)).toEqual([{ id: sleeping, workflow: 'echo', state: 'waiting' }]);

    const listener = await session(db.url);
    const heard: string[] = [];
    listener.on('notification', ({ payload }) => heard.push(payload ?? ''));
    await listener.query('LISTEN wf_runs_due');
    expect(await announceDueRuns(sql)).toBe(1);
    await eventually('the announcement', async () => heard.length > 0);
    await listener.end();
    // As the runs_notify_due trigger words it: `<due, epoch ms> <run id> <queue>`.
    const [at, runId, queue] = heard[0].split(' ');
    expect(heard).toHaveLength(1);
    expect({ at: Number(at), runId, queue }).toEqual({ at: wakeAt, runId: sleeping, queue: 'echo:1' });
    await sql.query(`UPDATE runs SET status = 'completed', finished_at = now() WHERE id = $1`, [sleeping]);
  });

  it("finds a schedule's next fire time, and the schedule once it is due and has not fired", async () => {
    const fireAt = Math.ceil(await databaseNow(sql)) + DAY;
    const scheduleId = uuidv7();
    await sql.query(
      `INSERT INTO schedules (id, workflow, version, interval_ms, overlap, catch_up, next_run_at) VALUES ($1, 'echo', '1', $2, 'skip', 'latest', $3)`,
      [scheduleId, DAY, new Date(fireAt)],
    );
    expect(await nextDueTime(sql)).toBe(fireAt);
    expect(await unsettledWork(sql, 5)).toEqual([]);
    await advanceTestClockTo(sql, fireAt);
    expect(await unsettledWork(sql, 5)).toEqual([{ id: scheduleId, workflow: 'echo', state: 'schedule due' }]);
  });
});

describe('a database without the test clock (production)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createMigratedDatabase('no_test_clock');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it("has no clock schema, and now() is pg_catalog's", async () => {
    const [row] = await db.sql<{ schema: string | null; path: string; now: string }>(
      `SELECT to_regnamespace('durable_test_clock')::text AS schema, current_setting('search_path') AS path,
              'now()'::regprocedure::oid = 'pg_catalog.now()'::regprocedure::oid AS now`,
    );
    expect(row).toEqual({ schema: null, path: '"$user", public', now: true });
  });
});
