import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { holdTransaction, withLockTimeout } from '../../../../test/support/held-transaction';
import { createMigratedDatabase, type MigratedDatabase } from '../../../../test/support/migrated-database';
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
  let db: MigratedDatabase;
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
    db = await createMigratedDatabase('schedules_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('stores a schedule and reads it back under its view names', async () => {
    const created = await insertSchedule(db.database, schedule({ cron: '0 * * * *', intervalMs: null, timezone: 'Europe/Paris', priority: 3 }));
    expect(created).toMatchObject({ cron: '0 * * * *', intervalMs: null, timezone: 'Europe/Paris', input: { to: 'ops' }, priority: 3, lastRunId: null });
    expect(await findSchedule(db.database, created.id)).toEqual(created);
    // An interval schedule stores no timezone and reads as UTC.
    const every = await insertSchedule(db.database, schedule({ timezone: 'Europe/Paris' }));
    expect(every).toMatchObject({ intervalMs: 60_000, timezone: 'UTC' });
    expect(await db.sql(`SELECT timezone FROM schedules WHERE id = $1`, [every.id])).toEqual([{ timezone: null }]);
    expect(await findSchedule(db.database, uuidv7())).toBeUndefined();
  });

  it('lists newest first, of one workflow, a page after a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await insertSchedule(db.database, schedule({ workflow: 'listed' }))).id);
    expect((await listSchedules(db.database, 2, 'listed')).map((row) => row.id)).toEqual([ids[2], ids[1]]);
    expect((await listSchedules(db.database, 2, 'listed', ids[1])).map((row) => row.id)).toEqual([ids[0]]);
    expect((await listSchedules(db.database, 100)).length).toBeGreaterThan(3);
  });

  it('locks a schedule until the transaction ends', async () => {
    const { id } = await insertSchedule(db.database, schedule());
    const holder = holdTransaction(db.database, (tx) => lockSchedule(tx, id));
    try {
      expect((await holder.started)?.id).toBe(id);
      await expect(withLockTimeout(db.database, 50, (tx) => lockSchedule(tx, id))).rejects.toMatchObject({ message: expect.stringContaining('lock timeout') });
      await holder.commit();
    } finally {
      await holder.release();
    }
  });

  it('hands a due schedule to one firing: the other skips it while it is held, and finds it not due once it moved on', async () => {
    const { id } = await insertSchedule(db.database, schedule({ nextRunAt: inMs(-1_000) }));
    const runId = await insertRun(db);
    const firing = holdTransaction(db.database, (tx) => lockDueSchedule(tx, id));
    try {
      const locked = await firing.started;
      expect(locked).toMatchObject({ id });
      expect(locked!.now).toBeGreaterThanOrEqual(locked!.nextRunAt!.getTime());
      // A second coordinator's firing does not wait for it, and finds it still due: it is busy elsewhere.
      expect(await withLockTimeout(db.database, 1_000, (tx) => lockDueSchedule(tx, id))).toBeUndefined();
      expect(await isScheduleDue(db.database, id)).toBe(true);
      await firing.commit((tx) => advanceSchedule(tx, id, inMs(60_000), new Date(), runId));
    } finally {
      await firing.release();
    }
    expect(await db.database.transaction((tx) => lockDueSchedule(tx, id))).toBeUndefined();
    expect(await isScheduleDue(db.database, id)).toBe(false);
    expect(await findSchedule(db.database, id)).toMatchObject({ lastRunId: runId });
  });

  it('moves a schedule on, keeping what it fired last when told nothing new', async () => {
    const runId = await insertRun(db);
    const { id } = await insertSchedule(db.database, schedule());
    const fired = await advanceSchedule(db.database, id, inMs(120_000), new Date(1_000), runId);
    expect(fired).toMatchObject({ lastFiredAt: new Date(1_000), lastRunId: runId });
    const triggered = await advanceSchedule(db.database, id, fired.nextRunAt, null, null);
    expect(triggered).toMatchObject({ nextRunAt: fired.nextRunAt, lastFiredAt: new Date(1_000), lastRunId: runId });
  });

  it('pauses (no next fire time), resumes, and deletes', async () => {
    const { id } = await insertSchedule(db.database, schedule());
    expect(await setSchedulePaused(db.database, id, null)).toMatchObject({ paused: true, nextRunAt: null });
    const next = inMs(30_000);
    expect(await setSchedulePaused(db.database, id, next)).toMatchObject({ paused: false, nextRunAt: next });
    await deleteSchedule(db.database, id);
    expect(await findSchedule(db.database, id)).toBeUndefined();
  });

  it('creates a declared schedule, writes nothing for the same declaration, and moves the fire time only when the timing changed', async () => {
    const declared = schedule({ workflow: 'declared', name: 'nightly', cron: '0 3 * * *', intervalMs: null });
    const first = inMs(60_000);
    await upsertDeclaredSchedule(db.database, { ...declared, nextRunAt: first }, first);
    const [stored] = await db.sql<{ id: string; xmin: string }>(`SELECT id, xmin::text FROM schedules WHERE workflow = 'declared'`);
    expect(stored.id).toBe(declared.id);

    await upsertDeclaredSchedule(db.database, { ...declared, id: uuidv7(), nextRunAt: inMs(1) }, inMs(1));
    expect(await db.sql(`SELECT id, xmin::text FROM schedules WHERE workflow = 'declared'`)).toEqual([stored]);

    await upsertDeclaredSchedule(db.database, { ...declared, id: uuidv7(), input: { to: 'all' }, nextRunAt: inMs(1) }, inMs(1));
    expect(await findSchedule(db.database, declared.id)).toMatchObject({ input: { to: 'all' }, nextRunAt: first });

    const moved = inMs(90_000);
    await upsertDeclaredSchedule(db.database, { ...declared, id: uuidv7(), input: { to: 'all' }, cron: '0 4 * * *', nextRunAt: moved }, moved);
    expect(await findSchedule(db.database, declared.id)).toMatchObject({ cron: '0 4 * * *', nextRunAt: moved });
  });

  it('keeps a pause made through the API when a declaration changes', async () => {
    const declared = schedule({ workflow: 'paused-declared', name: 'hourly' });
    await upsertDeclaredSchedule(db.database, declared, declared.nextRunAt!);
    await setSchedulePaused(db.database, declared.id, null);
    await upsertDeclaredSchedule(db.database, { ...declared, id: uuidv7(), intervalMs: 30_000 }, inMs(30_000));
    expect(await findSchedule(db.database, declared.id)).toMatchObject({ intervalMs: 30_000, paused: true, nextRunAt: null });
  });

  it("deletes the declared schedules neither the registration nor an online worker declares, never the API's", async () => {
    for (const name of ['kept', 'gone', 'online', 'offline'])
      await upsertDeclaredSchedule(db.database, schedule({ workflow: 'undeclared', name }), inMs(60_000));
    await insertSchedule(db.database, schedule({ workflow: 'undeclared' }));
    const declares = (name: string) => JSON.stringify([{ workflow: 'undeclared', version: '1', name }]);
    await db.sql(
      `INSERT INTO workers (id, subscriber, failed_over, concurrency, runs_held, workflows, expires_at, declared_schedules)
       VALUES ('w-online', 'http', false, 1, 0, '[]', now() + interval '1 minute', $1), ('w-offline', 'http', false, 1, 0, '[]', now() - interval '1 second', $2)`,
      [declares('online'), declares('offline')],
    );
    await deleteUndeclaredSchedules(db.database, 'undeclared', '1', ['kept']);
    expect(await names('undeclared')).toEqual(['kept', 'online', null]);
  });

  it("reads the previous run's status and the run an idempotency key started", async () => {
    const runId = await insertRun(db, { workflow: 'keyed', status: 'running', idempotencyKey: 'schedule:x:1' });
    expect(await previousRunStatus(db.database, runId)).toBe('running');
    expect(await previousRunStatus(db.database, uuidv7())).toBeUndefined();
    expect(await runStartedWithKey(db.database, 'keyed', 'schedule:x:1')).toBe(runId);
    expect(await runStartedWithKey(db.database, 'other', 'schedule:x:1')).toBeUndefined();
  });
});
