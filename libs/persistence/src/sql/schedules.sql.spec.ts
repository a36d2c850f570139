import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { uuidv7 } from '../ids';
import {
  advanceSchedule,
  deleteSchedule,
  deleteUndeclaredSchedules,
  findSchedule,
  insertSchedule,
  isScheduleDue,
  listSchedules,
  lockDueSchedule,
  lockSchedule,
  type NewSchedule,
  previousRunStatus,
  runStartedWithKey,
  setSchedulePaused,
  upsertDeclaredSchedule,
} from './schedules.sql';

describe('schedules.sql', () => {
  let db: SqlTestDatabase;
  const inMs = (ms: number) => new Date(Date.now() + ms);
  const schedule = (fields: Partial<NewSchedule> = {}): NewSchedule => ({
    id: uuidv7(),
    workflow: 'report',
    version: '1',
    name: null,
    cron: null,
    intervalMs: 60_000,
    timezone: 'UTC',
    input: { to: 'ops' },
    shard: null,
    priority: 0,
    overlap: 'skip',
    catchUp: 'none',
    paused: false,
    nextRunAt: inMs(60_000),
    ...fields,
  });
  const names = async (workflow: string) =>
    (await db.sql<{ name: string }>(`SELECT name FROM schedules WHERE workflow = $1 ORDER BY name`, [workflow])).map((row) => row.name);

  beforeAll(async () => {
    db = await createSqlTestDatabase('schedules_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('stores a schedule and reads it back under its view names', async () => {
    const created = await insertSchedule(db.db, schedule({ cron: '0 * * * *', intervalMs: null, timezone: 'Europe/Paris', priority: 3 }));
    expect(created).toMatchObject({ cron: '0 * * * *', intervalMs: null, timezone: 'Europe/Paris', input: { to: 'ops' }, priority: 3, lastRunId: null });
    expect(await findSchedule(db.db, created.id)).toEqual(created);
    // An interval schedule stores no timezone and reads as UTC.
    const every = await insertSchedule(db.db, schedule({ timezone: 'Europe/Paris' }));
    expect(every).toMatchObject({ intervalMs: 60_000, timezone: 'UTC' });
    expect(await db.sql(`SELECT timezone FROM schedules WHERE id = $1`, [every.id])).toEqual([{ timezone: null }]);
    expect(await findSchedule(db.db, uuidv7())).toBeUndefined();
  });

  it('lists newest first, of one workflow, a page after a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await insertSchedule(db.db, schedule({ workflow: 'listed' }))).id);
    expect((await listSchedules(db.db, 2, 'listed')).map((row) => row.id)).toEqual([ids[2], ids[1]]);
    expect((await listSchedules(db.db, 2, 'listed', ids[1])).map((row) => row.id)).toEqual([ids[0]]);
    expect((await listSchedules(db.db, 100)).length).toBeGreaterThan(3);
  });

  it('locks a schedule until the transaction ends', async () => {
    const { id } = await insertSchedule(db.db, schedule());
    const holder = await holdTransaction(db.db, (tx) => lockSchedule(tx, id));
    const second = db.db.transaction((tx) => lockSchedule(tx, id));
    try {
      expect(holder.result?.id).toBe(id);
      await db.someoneWaitsForALock();
    } finally {
      await holder.commit();
    }
    expect((await second)?.id).toBe(id);
  });

  it('hands a due schedule to one firing: the other skips it while it is held, and finds it not due once it moved on', async () => {
    const { id } = await insertSchedule(db.db, schedule({ nextRunAt: inMs(-1_000) }));
    const runId = await insertRun(db);
    // A firing: it locks the schedule, and moves it on in the same transaction.
    const firing = await holdTransaction(db.db, async (tx) => {
      const locked = await lockDueSchedule(tx, id);
      await advanceSchedule(tx, id, inMs(60_000), new Date(), runId);
      return locked;
    });
    try {
      expect(firing.result).toMatchObject({ id });
      expect(firing.result!.now).toBeGreaterThanOrEqual(firing.result!.nextRunAt!.getTime());
      // A second coordinator's firing does not wait for it (its sessions' lock_timeout would fail it), and finds it
      // still due as committed: it is busy elsewhere.
      expect(await db.db.transaction((tx) => lockDueSchedule(tx, id))).toBeUndefined();
      expect(await isScheduleDue(db.db, id)).toBe(true);
    } finally {
      await firing.commit();
    }
    expect(await db.db.transaction((tx) => lockDueSchedule(tx, id))).toBeUndefined();
    expect(await isScheduleDue(db.db, id)).toBe(false);
    expect(await findSchedule(db.db, id)).toMatchObject({ lastRunId: runId });
  });

  it('moves a schedule on, keeping what it fired last when told nothing new', async () => {
    const runId = await insertRun(db);
    const { id } = await insertSchedule(db.db, schedule());
    const fired = await advanceSchedule(db.db, id, inMs(120_000), new Date(1_000), runId);
    expect(fired).toMatchObject({ lastFiredAt: new Date(1_000), lastRunId: runId });
    const triggered = await advanceSchedule(db.db, id, fired.nextRunAt, null, null);
    expect(triggered).toMatchObject({ nextRunAt: fired.nextRunAt, lastFiredAt: new Date(1_000), lastRunId: runId });
  });

  it('pauses (no next fire time), resumes, and deletes', async () => {
    const { id } = await insertSchedule(db.db, schedule());
    expect(await setSchedulePaused(db.db, id, null)).toMatchObject({ paused: true, nextRunAt: null });
    const next = inMs(30_000);
    expect(await setSchedulePaused(db.db, id, next)).toMatchObject({ paused: false, nextRunAt: next });
    await deleteSchedule(db.db, id);
    expect(await findSchedule(db.db, id)).toBeUndefined();
  });

  it('creates a declared schedule, writes nothing for the same declaration, and moves the fire time only when the timing changed', async () => {
    const declared = schedule({ workflow: 'declared', name: 'nightly', cron: '0 3 * * *', intervalMs: null });
    const first = inMs(60_000);
    await upsertDeclaredSchedule(db.db, { ...declared, nextRunAt: first }, first);
    const [stored] = await db.sql<{ id: string; xmin: string }>(`SELECT id, xmin::text FROM schedules WHERE workflow = 'declared'`);
    expect(stored.id).toBe(declared.id);

    await upsertDeclaredSchedule(db.db, { ...declared, id: uuidv7(), nextRunAt: inMs(1) }, inMs(1));
    expect(await db.sql(`SELECT id, xmin::text FROM schedules WHERE workflow = 'declared'`)).toEqual([stored]);

    await upsertDeclaredSchedule(db.db, { ...declared, id: uuidv7(), input: { to: 'all' }, nextRunAt: inMs(1) }, inMs(1));
    expect(await findSchedule(db.db, declared.id)).toMatchObject({ input: { to: 'all' }, nextRunAt: first });

    const moved = inMs(90_000);
    await upsertDeclaredSchedule(db.db, { ...declared, id: uuidv7(), input: { to: 'all' }, cron: '0 4 * * *', nextRunAt: moved }, moved);
    expect(await findSchedule(db.db, declared.id)).toMatchObject({ cron: '0 4 * * *', nextRunAt: moved });
  });

  it('keeps a pause made through the API when a declaration changes', async () => {
    const declared = schedule({ workflow: 'paused-declared', name: 'hourly' });
    await upsertDeclaredSchedule(db.db, declared, declared.nextRunAt!);
    await setSchedulePaused(db.db, declared.id, null);
    await upsertDeclaredSchedule(db.db, { ...declared, id: uuidv7(), intervalMs: 30_000 }, inMs(30_000));
    expect(await findSchedule(db.db, declared.id)).toMatchObject({ intervalMs: 30_000, paused: true, nextRunAt: null });
  });

  it("deletes the declared schedules neither the registration nor an online worker declares, never the API's", async () => {
    for (const name of ['kept', 'gone', 'online', 'offline']) await upsertDeclaredSchedule(db.db, schedule({ workflow: 'undeclared', name }), inMs(60_000));
    await insertSchedule(db.db, schedule({ workflow: 'undeclared' }));
    const declares = (name: string) => JSON.stringify([{ workflow: 'undeclared', version: '1', name }]);
    await db.sql(
      `INSERT INTO workers (id, subscriber, failed_over, concurrency, runs_held, workflows, expires_at, declared_schedules)
       VALUES ('w-online', 'http', false, 1, 0, '[]', now() + interval '1 minute', $1), ('w-offline', 'http', false, 1, 0, '[]', now() - interval '1 second', $2)`,
      [declares('online'), declares('offline')],
    );
    await deleteUndeclaredSchedules(db.db, 'undeclared', '1', ['kept']);
    expect(await names('undeclared')).toEqual(['kept', 'online', null]);
  });

  it("reads the previous run's status and the run an idempotency key started", async () => {
    const runId = await insertRun(db, { workflow: 'keyed', status: 'running', idempotencyKey: 'schedule:x:1' });
    expect(await previousRunStatus(db.db, runId)).toBe('running');
    expect(await previousRunStatus(db.db, uuidv7())).toBeUndefined();
    expect(await runStartedWithKey(db.db, 'keyed', 'schedule:x:1')).toBe(runId);
    expect(await runStartedWithKey(db.db, 'other', 'schedule:x:1')).toBeUndefined();
  });
});
