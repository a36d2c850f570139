import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type ScheduleView, WorkflowClient } from '@nest-durable/client';
import { Client } from 'pg';
import request from 'supertest';
import { defineWorkflow, type WorkflowSchedule } from '@nest-durable/workflow';
import { type RunningCoordinator, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { RUN_TABLES } from '@app/persistence';

const ECHO = { name: 'echo', version: '1' };

/** A workflow version that declares its schedules in code. */
const scheduled = (schedules: WorkflowSchedule<{ n: number }>[]) =>
  defineWorkflow<{ n: number }, number>({ name: 'scheduled', version: '1', schedules, handler: async (_ctx, input) => input.n });
const EVERY_SECOND = '* * * * * *';

/** A run a schedule started: the fire time its idempotency key names, and how late it was started. */
interface FiredRun {
  id: string;
  status: string;
  fireTime: number;
  latenessMs: number;
}

/**
 * Schedules fire at their times, once per fire time, whichever coordinators are up: no workers here,
 * so the runs they start stay queued (unfinished) unless cancelled, which is what overlap acts on.
 */
describe('schedules', () => {
  let db: TestDatabase;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('schedules');
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await stopAllProcesses();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, schedules CASCADE`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const coordinator = async (overrides: Parameters<typeof startCoordinator>[1] = {}): Promise<RunningCoordinator> => {
    const started = await startCoordinator(db.url, overrides);
    running.push(started);
    return started;
  };

  /** The runs each firing of the schedule started (not its triggers), by fire time. */
  const firedRuns = async (scheduleId: string): Promise<FiredRun[]> => {
    const rows = await db.sql<{ id: string; status: string; key: string; createdMs: number }>(
      `SELECT id, status, idempotency_key AS key, (extract(epoch FROM created_at) * 1000)::float8 AS "createdMs"
         FROM runs WHERE idempotency_key LIKE $1 AND idempotency_key NOT LIKE $2`,
      [`schedule:${scheduleId}:%`, `schedule:${scheduleId}:trigger:%`],
    );
    return rows
      .map((row) => {
        const fireTime = new Date(row.key.slice(`schedule:${scheduleId}:`.length)).getTime();
        return { id: row.id, status: row.status, fireTime, latenessMs: row.createdMs - fireTime };
      })
      .sort((a, b) => a.fireTime - b.fireTime);
  };

  const dbNow = async () => (await db.sql<{ now: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`))[0].now;

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  it('fires an every-second schedule once per tick across two coordinators, one of them killed and restarted (real processes)', async () => {
    const start = async (name: string) => {
      const port = await freePort();
      const app = new AppProcess(name, 'apps/coordinator/src/main.ts', { DATABASE_URL: db.url, PORT: String(port), HOST: '127.0.0.1', AUTH_DISABLED: 'true' });
      await app.waitForOutput('listening on');
      return { app, url: `http://127.0.0.1:${port}` };
    };
    const a = await start('coordinator-a');
    const b = await start('coordinator-b');
    const viaB = new WorkflowClient({ url: b.url });
    // overlap allow: no worker finishes the runs, and every tick must start one.
    const schedule = await new WorkflowClient({ url: a.url }).createSchedule(ECHO, { cron: EVERY_SECOND, overlap: 'allow', input: 'tick' });
    const ticks = async (n: number) => {
      const before = (await firedRuns(schedule.id)).length;
      await eventually(`${n} more ticks`, async () => (await firedRuns(schedule.id)).length >= before + n, 15_000);
    };

    await ticks(3);
    a.app.signal('SIGKILL');
    await a.app.exited;
    await ticks(3);
    const restarted = await start('coordinator-a-again');
    await ticks(3);
    await viaB.pauseSchedule(schedule.id);
    await restarted.app.stop();
    await b.app.stop();

    const runs = await firedRuns(schedule.id);
    expect(runs.length).toBeGreaterThanOrEqual(9);
    // One run per second from the first to the last: none missing, none twice.
    const first = runs[0].fireTime;
    expect(runs.map((run) => run.fireTime)).toEqual(runs.map((_, i) => first + i * 1_000));
    expect(first % 1_000).toBe(0);
    // At the tick, not on a poll: late by the timer's few ms (a kill mid-firing costs a retry).
    expect(runs.every((run) => run.latenessMs >= 0 && run.latenessMs < 1_000)).toBe(true);
    expect(median(runs.map((run) => run.latenessMs))).toBeLessThan(100);
  }, 90_000);

  it('fires a fire time held up by another firing as soon as that one lets go, not a tick later', async () => {
    const c = await coordinator();
    const schedule = await new WorkflowClient({ url: c.url }).createSchedule(ECHO, { intervalMs: 60_000, paused: true });
    // Due now, held by a session that stands for another coordinator in the middle of its firing.
    await db.sql(`UPDATE schedules SET paused = false, next_run_at = date_trunc('milliseconds', now()) + interval '300 milliseconds' WHERE id = $1`, [
      schedule.id,
    ]);
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE', [schedule.id]);
      const [{ at }] = await db.sql<{ at: number }>(`SELECT (extract(epoch FROM next_run_at) * 1000)::float8 AS at FROM schedules WHERE id = $1`, [
        schedule.id,
      ]);
      await eventually('the fire time to pass by a second', async () => (await dbNow()) > at + 1_000);
      expect(await firedRuns(schedule.id)).toEqual([]);
      await holder.query('ROLLBACK');
      const releasedAt = await dbNow();
      const [run] = await eventually('the held fire time to start its run', async () => {
        const runs = await firedRuns(schedule.id);
        return runs.length > 0 && runs;
      });
      expect(run.fireTime).toBe(at);
      // Tried again within 100 ms of finding it held, not at the next fire time (a minute away).
      expect(run.fireTime + run.latenessMs - releasedAt).toBeLessThan(500);
    } finally {
      await holder.end();
    }
  });

  it('catches up after its coordinator was down: none, the latest, or all of the fire times missed', async () => {
    const graceMs = 300;
    const first = await coordinator({ scheduleMisfireGraceMs: graceMs });
    const client = new WorkflowClient({ url: first.url });
    const schedules = {
      none: await client.createSchedule(ECHO, { cron: EVERY_SECOND, overlap: 'allow', catchUp: 'none' }),
      latest: await client.createSchedule(ECHO, { cron: EVERY_SECOND, overlap: 'allow', catchUp: 'latest' }),
      all: await client.createSchedule(ECHO, { cron: EVERY_SECOND, overlap: 'allow', catchUp: 'all' }),
    };
    const all = Object.values(schedules);
    await eventually('each schedule to fire', async () => (await Promise.all(all.map((s) => firedRuns(s.id)))).every((runs) => runs.length > 0));
    await running.pop()!.close();
    const stoppedAt = await dbNow();
    await eventually('four fire times to pass with no coordinator up', async () => (await dbNow()) > stoppedAt + 4_000, 10_000);

    const second = await coordinator({ scheduleMisfireGraceMs: graceMs });
    await eventually('each schedule to fire again', async () =>
      (await Promise.all(all.map((s) => firedRuns(s.id)))).every((runs) => runs.some((run) => run.fireTime > stoppedAt + 4_000)),
    );
    await Promise.all(all.map((s) => new WorkflowClient({ url: second.url }).pauseSchedule(s.id)));

    /** The runs fired for times after the stop, and the moment the first of them was started (the catch-up). */
    const afterStop = async (s: ScheduleView) => {
      const runs = (await firedRuns(s.id)).filter((run) => run.fireTime > stoppedAt);
      return { runs, backAt: Math.min(...runs.map((run) => run.fireTime + run.latenessMs)) };
    };
    const missed = (backAt: number) => {
      const times: number[] = [];
      for (let t = Math.ceil(stoppedAt / 1_000) * 1_000; t <= backAt; t += 1_000) times.push(t);
      return times;
    };

    const all_ = await afterStop(schedules.all);
    expect(missed(all_.backAt).length).toBeGreaterThanOrEqual(4);
    expect(all_.runs.filter((run) => run.fireTime <= all_.backAt).map((run) => run.fireTime)).toEqual(missed(all_.backAt));

    const latest = await afterStop(schedules.latest);
    expect(missed(latest.backAt).length).toBeGreaterThanOrEqual(4);
    expect(latest.runs.filter((run) => run.fireTime <= latest.backAt).map((run) => run.fireTime)).toEqual([missed(latest.backAt).pop()]);

    const none = await afterStop(schedules.none);
    // Nothing later than the grace was started: the fire times missed while no coordinator was up are skipped.
    expect(none.runs.length).toBeGreaterThan(0);
    expect(none.runs.every((run) => run.latenessMs <= graceMs)).toBe(true);
    expect(none.runs[0].fireTime).toBeGreaterThan(stoppedAt + 4_000 - graceMs);
  }, 60_000);

  it('skips, allows or cancels a run while the previous one is unfinished (overlap)', async () => {
    const c = await coordinator();
    const client = new WorkflowClient({ url: c.url });
    const create = (overlap: 'skip' | 'allow' | 'cancel-previous') => client.createSchedule(ECHO, { intervalMs: 300, overlap });
    const [skip, allow, cancel] = [await create('skip'), await create('allow'), await create('cancel-previous')];
    await eventually('four firings of each', async () => (await firedRuns(allow.id)).length >= 4 && (await firedRuns(cancel.id)).length >= 4);
    await eventually('the skipping one to act on four fire times', async () => {
      const { lastFiredAt } = await client.getSchedule(skip.id);
      const [firstRun] = await firedRuns(skip.id);
      return lastFiredAt !== null && firstRun !== undefined && new Date(lastFiredAt).getTime() >= firstRun.fireTime + 3 * 300;
    });
    for (const s of [skip, allow, cancel]) await client.pauseSchedule(s.id);

    const skipped = await firedRuns(skip.id);
    expect(skipped.map((run) => run.status)).toEqual(['queued']);
    expect((await firedRuns(allow.id)).every((run) => run.status === 'queued')).toBe(true);
    const cancelled = await firedRuns(cancel.id);
    expect(cancelled.map((run) => run.status)).toEqual([...cancelled.slice(1).map(() => 'cancelled'), 'queued']);
    // Cancelled as POST /v1/runs/:id/cancel cancels: with the history row a client's cancel writes.
    const [history] = await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM run_transitions WHERE run_id = $1 AND to_status = 'cancelled'`, [
      cancelled[0].id,
    ]);
    expect(history.n).toBe(1);

    // Once its run is finished, the skipping schedule starts the next one.
    await client.cancel(skipped[0].id);
    await client.resumeSchedule(skip.id);
    await eventually('a second run of the skipping schedule', async () => (await firedRuns(skip.id)).length === 2);
  }, 30_000);

  it('pauses, resumes, triggers and deletes', async () => {
    const c = await coordinator();
    const client = new WorkflowClient({ url: c.url });
    const created = await client.createSchedule(ECHO, { cron: EVERY_SECOND, paused: true, input: { from: 'schedule' } });
    expect(created).toMatchObject({ paused: true, nextRunAt: null, overlap: 'skip', catchUp: 'latest', timezone: 'UTC', name: null });
    expect(await client.listSchedules()).toMatchObject({ schedules: [{ id: created.id }], nextCursor: null });

    // Paused from the start: two fire times pass, nothing fires.
    const createdAt = await dbNow();
    await eventually('two fire times to pass', async () => (await dbNow()) > createdAt + 2_000);
    expect(await firedRuns(created.id)).toEqual([]);

    const triggered = await client.triggerSchedule(created.id);
    expect(triggered.run).toMatchObject({ workflow: 'echo', version: '1', status: 'queued', input: { from: 'schedule' } });
    expect(triggered.run.idempotencyKey).toMatch(new RegExp(`^schedule:${created.id}:trigger:`));
    expect(triggered.run.tags).toEqual({ schedule: created.id });
    expect(triggered.schedule).toMatchObject({ paused: true, lastRunId: triggered.run.id });

    const resumed = await client.resumeSchedule(created.id);
    expect(resumed.paused).toBe(false);
    expect(new Date(resumed.nextRunAt!).getTime()).toBeGreaterThan(createdAt + 2_000);
    // overlap skip: the triggered run is unfinished, so the schedule waits for it.
    const afterResume = await dbNow();
    await eventually('a fire time to pass', async () => (await client.getSchedule(created.id)).lastFiredAt !== null);
    expect(await firedRuns(created.id)).toEqual([]);
    await client.cancel(triggered.run.id);
    await eventually('the schedule to fire', async () => (await firedRuns(created.id)).length > 0);
    expect((await firedRuns(created.id))[0].fireTime).toBeGreaterThan(afterResume);

    const paused = await client.pauseSchedule(created.id);
    expect(paused).toMatchObject({ paused: true, nextRunAt: null });
    expect(await client.pauseSchedule(created.id)).toMatchObject({ paused: true });

    await request(c.url).delete(`/v1/schedules/${created.id}`).expect(204);
    await request(c.url)
      .get(`/v1/schedules/${created.id}`)
      .expect(404, { statusCode: 404, error: 'Not Found', reason: 'schedule_not_found', message: `schedule ${created.id} does not exist` });
    await request(c.url).delete(`/v1/schedules/${created.id}`).expect(404);
    await request(c.url).post(`/v1/schedules/${created.id}/trigger`).expect(404);
    // Its runs stay.
    expect((await firedRuns(created.id)).length).toBeGreaterThan(0);
  }, 30_000);

  it('reads cron with seconds and in a time zone', async () => {
    const c = await coordinator();
    const client = new WorkflowClient({ url: c.url });
    const everyTwo = await client.createSchedule(ECHO, { cron: '*/2 * * * * *', timezone: 'Asia/Kolkata', overlap: 'allow' });
    await eventually('two firings', async () => (await firedRuns(everyTwo.id)).length >= 2);
    const [one, two] = await firedRuns(everyTwo.id);
    expect(one.fireTime % 2_000).toBe(0);
    expect(two.fireTime - one.fireTime).toBe(2_000);
    const metrics = (await request(c.url).get('/metrics').expect(200)).text;
    expect(Number(/^wf_schedule_fire_lateness_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);

    const morning = await client.createSchedule(ECHO, { cron: '0 30 9 * * *', timezone: 'America/New_York' });
    const next = new Date(morning.nextRunAt!);
    const inNewYork = new Intl.DateTimeFormat('en-GB', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    expect(inNewYork.format(next)).toBe('09:30:00');
    expect(next.getTime() - Date.now()).toBeGreaterThan(0);
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(25 * 3_600_000);
    expect(morning).toMatchObject({ cron: '0 30 9 * * *', timezone: 'America/New_York', intervalMs: null });
  });

  it('refuses a bad schedule with 400 and a reason, and stores nothing', async () => {
    const c = await coordinator();
    const cases: [Record<string, unknown>, string][] = [
      [{ cron: '61 * * * *' }, 'invalid_cron'],
      [{ cron: 'at noon' }, 'invalid_cron'],
      [{ cron: '0 0 31 2 *' }, 'invalid_cron'],
      [{ cron: '', intervalMs: undefined }, 'invalid_cron'],
      [{ cron: '* * * * *', timezone: 'Europe/Atlantis' }, 'invalid_timezone'],
      [{ intervalMs: 1_000, timezone: 'UTC' }, 'invalid_timezone'],
      [{ cron: '* * * * *', intervalMs: 1_000 }, 'invalid_schedule'],
      [{}, 'invalid_schedule'],
      [{ intervalMs: 10 }, 'invalid_intervalMs'],
      [{ intervalMs: '1000' }, 'invalid_intervalMs'],
      [{ cron: '* * * * *', overlap: 'queue' }, 'invalid_overlap'],
      [{ cron: '* * * * *', catchUp: 'some' }, 'invalid_catchUp'],
      [{ cron: '* * * * *', every: 5 }, 'unknown_field'],
      [{ cron: '* * * * *', workflow: 'no such:name' }, 'invalid_workflow'],
    ];
    for (const [fields, reason] of cases) {
      const response = await request(c.url)
        .post('/v1/schedules')
        .send({ workflow: 'echo', version: '1', ...fields });
      expect({ fields, status: response.status, reason: response.body.reason }).toEqual({ fields, status: 400, reason });
      expect(typeof response.body.message).toBe('string');
    }
    await request(c.url).get('/v1/schedules/not-a-uuid').expect(400);
    expect(await db.sql('SELECT id FROM schedules')).toEqual([]);
  });

  it('reconciles schedules declared in code when workers register: created, changed, deleted, a pause kept', async () => {
    const c = await coordinator();
    const client = new WorkflowClient({ url: c.url });
    const declared = async () => (await client.listSchedules({ workflow: 'scheduled' })).schedules;
    const worker = async (schedules: WorkflowSchedule<{ n: number }>[]) => {
      const started = await startCustomWorker(c.url, { workerId: 'declaring', workflows: [scheduled(schedules)], registrationIntervalMs: 100 });
      running.push(started);
      return started;
    };
    const registrations = async (n: number) => {
      const seen = async () => new Date((await client.listWorkers()).items.find((w) => w.id === 'declaring')?.lastSeenAt ?? 0).getTime();
      const from = await seen();
      for (let i = 0; i < n; i++) {
        const before = await seen();
        await eventually('a registration', async () => (await seen()) > before);
      }
      return from;
    };

    const first = await worker([
      { name: 'often', intervalMs: 200, input: { n: 7 } },
      { name: 'nightly', cron: '0 0 3 * * *', timezone: 'Europe/Berlin' },
    ]);
    const [nightly, often] = await eventually('both declared', async () => {
      const found = await declared();
      return found.length === 2 ? [...found].sort((a, b) => a.name!.localeCompare(b.name!)) : undefined;
    });
    expect(often).toMatchObject({ name: 'often', intervalMs: 200, input: { n: 7 }, paused: false, overlap: 'skip' });
    expect(nightly).toMatchObject({ name: 'nightly', cron: '0 0 3 * * *', timezone: 'Europe/Berlin' });
    // It fires, and the worker hosting it runs what it starts.
    await eventually('a scheduled run completed', async () => (await firedRuns(often.id)).some((run) => run.status === 'completed'));
    const [completed] = (await firedRuns(often.id)).filter((run) => run.status === 'completed');
    expect((await client.get(completed.id)).output).toBe(7);

    // Declared in code: deleted by deleting it there; paused through the API, and paused it stays.
    await request(c.url)
      .delete(`/v1/schedules/${often.id}`)
      .expect(409)
      .expect((response) => expect(response.body.reason).toBe('schedule_in_code'));
    await client.pauseSchedule(often.id);
    await registrations(3);
    expect(await client.getSchedule(often.id)).toMatchObject({ paused: true, nextRunAt: null });

    // New code for the version: `often` changes (same schedule), `nightly` is gone, and the pause holds.
    await first.close();
    running.splice(running.indexOf(first), 1);
    await worker([{ name: 'often', intervalMs: 500, input: { n: 8 } }]);
    await eventually('the new declaration', async () => {
      const found = await declared();
      return found.length === 1 && found[0].intervalMs === 500;
    });
    expect(await declared()).toEqual([
      expect.objectContaining({ id: often.id, name: 'often', intervalMs: 500, input: { n: 8 }, paused: true, nextRunAt: null }),
    ]);
    const resumed = await client.resumeSchedule(often.id);
    await registrations(2);
    expect(await client.getSchedule(often.id)).toMatchObject({ paused: false, nextRunAt: expect.any(String) });
    expect(new Date((await client.getSchedule(often.id)).nextRunAt!).getTime()).toBeGreaterThanOrEqual(new Date(resumed.nextRunAt!).getTime());

    // Once no online worker hosts the version (retired), the API deletes it.
    await running.pop()!.close();
    await eventually('the worker offline', async () => (await client.listWorkers()).items.find((w) => w.id === 'declaring')?.online === false);
    await client.deleteSchedule(often.id);
    expect(await declared()).toEqual([]);
  }, 30_000);

  it('keeps a schedule that some online worker of its version declares while others do not (a rolling deploy)', async () => {
    const c = await coordinator();
    const client = new WorkflowClient({ url: c.url });
    const register = (workerId: string, schedules: unknown[], intervalMs = 60_000) =>
      request(c.url)
        .put(`/v1/worker/workers/${workerId}`)
        .send({
          subscriber: 'http',
          failedOver: false,
          concurrency: 1,
          runsHeld: 0,
          intervalMs,
          workflows: [{ name: 'scheduled', version: '1', shards: [], schedules }],
        })
        .expect(204);
    const byName = async () => Object.fromEntries((await client.listSchedules({ workflow: 'scheduled' })).schedules.map((s) => [s.name, s]));
    const often = { name: 'often', intervalMs: 60_000 };
    const nightly = { name: 'nightly', cron: '0 0 3 * * *' };

    // The old code declares `often`; the new code (same version) `often` and `nightly`.
    await register('old-code', [often]);
    await register('new-code', [often, nightly], 100);
    const before = await byName();
    expect(Object.keys(before).sort()).toEqual(['nightly', 'often']);
    await client.pauseSchedule(before.nightly.id);
    // The old code registering again leaves `nightly` alone: the new code, online, declares it.
    await register('old-code', [often]);
    await register('new-code', [often, nightly], 100);
    await register('old-code', [often]);
    const after = await byName();
    expect(after).toEqual({
      often: expect.objectContaining({ id: before.often.id }),
      nightly: expect.objectContaining({ id: before.nightly.id, paused: true }),
    });
    // Once no online worker declares it (the new code stopped), the next registration of the version deletes it.
    await register('new-code', [often, nightly], 100);
    await eventually('the new code offline', async () => (await client.listWorkers()).items.find((w) => w.id === 'new-code')?.online === false);
    await register('old-code', [often]);
    expect(Object.keys(await byName())).toEqual(['often']);
  });

  it('refuses a registration whose code declares a bad schedule, and stores nothing of it', async () => {
    const c = await coordinator();
    const register = (schedules: unknown[]) =>
      request(c.url)
        .put('/v1/worker/workers/bad-declaration')
        .send({
          subscriber: 'http',
          failedOver: false,
          concurrency: 1,
          runsHeld: 0,
          intervalMs: 5_000,
          workflows: [{ name: 'scheduled', version: '1', shards: [], schedules }],
        });
    const cases: [unknown[], string][] = [
      [[{ name: 'bad', cron: '* * * 13 *' }], 'invalid_cron'],
      [[{ name: 'bad', cron: '* * * * *', timezone: 'Nowhere/Land' }], 'invalid_timezone'],
      [[{ name: 'bad' }], 'invalid_schedule'],
      [
        [
          { name: 'twice', intervalMs: 1_000 },
          { name: 'twice', cron: '* * * * *' },
        ],
        'invalid_schedules',
      ],
      [[{ name: 'bad name!', intervalMs: 1_000 }], 'invalid_schedule_name'],
      [[{ name: 'bad', intervalMs: 1_000, at: 'noon' }], 'unknown_field'],
    ];
    for (const [schedules, reason] of cases) {
      const response = await register(schedules);
      expect({ schedules, status: response.status, reason: response.body.reason }).toEqual({ schedules, status: 400, reason });
    }
    expect(await db.sql('SELECT id FROM schedules')).toEqual([]);
    expect(await db.sql(`SELECT id FROM workers WHERE id = 'bad-declaration'`)).toEqual([]);
  });
});
