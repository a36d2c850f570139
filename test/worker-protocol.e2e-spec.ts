import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/client';
import request from 'supertest';
import { ReportRepository } from '@app/run-store';
import { ResultWaits } from '../apps/coordinator/src/hand-off/result-waits.service';
import { WaitingClaims } from '../apps/coordinator/src/hand-off/waiting-claims.service';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { RUN_TABLES } from '@app/persistence';

/**
 * The worker protocol, driven over HTTP by the test acting as workers, against the real
 * coordinator and PostgreSQL.
 */
describe('worker protocol', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  const ECHO: { name: string; version: string; shard?: string }[] = [{ name: 'echo', version: '1' }];

  beforeAll(async () => {
    db = await createTestDatabase('protocol');
    // Long poll interval: a claim that returns early was woken by NOTIFY, not by the poll.
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 60_000, claimMinIdleTimeMs: 1_500, heartbeatIntervalMs: 500 });
  });

  afterEach(async () => {
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);

  async function startRuns(count: number, workflow = 'echo', version = '1'): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const response = await http().post('/v1/runs').send({ workflow, version, input: { i } }).expect(201);
      ids.push(response.body.id);
    }
    return ids;
  }

  /** A run's first task result, `step#1`, completed with `output`. */
  const lastStep = (expectedRevision: number, output: number) => ({
    expectedRevision,
    key: 'step#1',
    seq: 0,
    name: 'step',
    status: 'completed',
    attempts: 1,
    output,
  });

  async function claim(workerId: string, limit: number, waitMs = 0, workflows = ECHO): Promise<ClaimedRun[]> {
    const response = await http().post('/v1/worker/claims').send({ workerId, workflows, limit, waitMs }).expect(200);
    return response.body.runs;
  }

  it('claims due runs, moving them to running at a new revision', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 10);
    expect(run).toMatchObject({ id, workflow: 'echo', version: '1', revision: 1, attempt: 1, input: { i: 0 }, tasks: [] });
    const view = await http().get(`/v1/runs/${id}`).expect(200);
    expect(view.body).toMatchObject({ status: 'running', revision: 1 });
    expect(await claim('w2', 10)).toEqual([]);
  });

  it('only claims runs of the requested workflows', async () => {
    await startRuns(1, 'other', '2');
    expect(await claim('w1', 10)).toEqual([]);
    expect(await claim('w1', 10, 0, [{ name: 'other', version: '2' }])).toHaveLength(1);
  });

  it('routes a run started with a shard only to claimers serving that shard', async () => {
    const routed = await http().post('/v1/runs').send({ workflow: 'echo', version: '1', shard: 'eu-west' }).expect(201);
    expect(await claim('w-default', 10)).toEqual([]);
    expect(await claim('w-us', 10, 0, [{ name: 'echo', version: '1', shard: 'us-east' }])).toEqual([]);
    const [run] = await claim('w-eu', 10, 0, [{ name: 'echo', version: '1', shard: 'eu-west' }]);
    expect(run.id).toBe(routed.body.id);
  });

  it('never hands the same run to two workers claiming at once', async () => {
    const ids = await startRuns(120);
    const claimed: string[][] = [[], [], [], []];
    await Promise.all(
      claimed.map(async (mine, worker) => {
        for (;;) {
          const runs = await claim(`w${worker}`, 7);
          if (runs.length === 0) return;
          mine.push(...runs.map((run) => run.id));
        }
      }),
    );
    const all = claimed.flat();
    expect(all).toHaveLength(120);
    expect(new Set(all).size).toBe(120);
    expect(new Set(all)).toEqual(new Set(ids));
  });

  it('long-polls: an idle claim is woken when runs are started (by a batch start, which hands no run to a claim)', async () => {
    const offers = jest.spyOn(coordinator.app.get(WaitingClaims), 'offer');
    try {
      const pending = claim('w-idle', 5, 30_000);
      // Start the runs only once the claim waits at the coordinator.
      await eventually('the claim to wait', async () => offers.mock.calls.length > 0);
      const started = await http()
        .post('/v1/runs/batch')
        .send({ runs: [{ workflow: 'echo', version: '1', input: { i: 0 } }] })
        .expect(201);
      const runs = await pending;
      expect(runs.map((run) => run.id)).toEqual([started.body.runs[0].id]);
    } finally {
      offers.mockRestore();
    }
  });

  it('returns an empty claim after waitMs when nothing is ready', async () => {
    expect(await claim('w-idle', 5, 300)).toEqual([]);
  });

  it('orders due runs by priority, then by due time, and holds back runs not yet due', async () => {
    const create = (priority: number, runAt?: string) => http().post('/v1/runs').send({ workflow: 'echo', version: '1', priority, runAt }).expect(201);
    const low = (await create(0)).body.id;
    const high = (await create(5)).body.id;
    const later = (await create(10, new Date(Date.now() + 60_000).toISOString())).body.id;
    const claimed = await claim('w1', 10);
    expect(claimed.map((run) => run.id)).toEqual([high, low]);
    const view = await http().get(`/v1/runs/${later}`).expect(200);
    expect(view.body.status).toBe('queued');
  });

  it('rejects a write with a stale expectedRevision (409) and changes nothing', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const before = (await http().get(`/v1/runs/${id}`).expect(200)).body;

    const stale = run.revision - 1;
    const task = await http()
      .post(`/v1/worker/runs/${id}/tasks`)
      .send({ expectedRevision: stale, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1 })
      .expect(409);
    expect(task.body).toMatchObject({ statusCode: 409, reason: 'revision_conflict' });
    await http().post(`/v1/worker/runs/${id}/complete`).send({ expectedRevision: stale, output: 'x' }).expect(409);
    await http()
      .post(`/v1/worker/runs/${id}/fail`)
      .send({ expectedRevision: stale, error: { message: 'x' } })
      .expect(409);

    const after = (await http().get(`/v1/runs/${id}`).expect(200)).body;
    expect(after).toEqual(before);
    expect(after.tasks).toEqual([]);

    await http().post(`/v1/worker/runs/${id}/complete`).send({ expectedRevision: run.revision, output: 'ok' }).expect(200);
    const done = (await http().get(`/v1/runs/${id}`).expect(200)).body;
    expect(done).toMatchObject({ status: 'completed', output: 'ok', revision: run.revision + 1 });
    // A finished run accepts no more writes, even at the revision that finished it.
    await http().post(`/v1/worker/runs/${id}/complete`).send({ expectedRevision: run.revision, output: 'again' }).expect(409);
  });

  it.each(['complete', 'fail'] as const)(
    'answers the same outcome sent again (%s: the answer to the first was lost) as the first, not with a 409; another outcome is a 409',
    async (type) => {
      const [id] = await startRuns(1);
      const [run] = await claim('w1', 1);
      const body = type === 'complete' ? { expectedRevision: run.revision, output: { n: 1 } } : { expectedRevision: run.revision, error: { message: 'broke' } };
      const first = await http().post(`/v1/worker/runs/${id}/${type}`).send(body).expect(200);
      expect(first.body).toEqual({ revision: run.revision + 1 });
      const again = await http().post(`/v1/worker/runs/${id}/${type}`).send(body).expect(200);
      expect(again.body).toEqual(first.body);
      const other = type === 'complete' ? { ...body, output: { n: 2 } } : { expectedRevision: run.revision, output: 'done' };
      await http().post(`/v1/worker/runs/${id}/complete`).send(other).expect(409);
      const transitions = await db.sql<{ count: string }>(`SELECT count(*) FROM run_transitions WHERE run_id = $1 AND from_status = 'running'`, [id]);
      expect(transitions[0].count).toBe('1');
    },
  );

  it.each(['sleep', 'event', 'child'] as const)(
    'answers the same suspension sent again (%s: the answer to the first was lost) as the first, not with a 409; another step is a 409',
    async (kind) => {
      const [id] = await startRuns(1);
      const [run] = await claim('w1', 1);
      const step = { expectedRevision: run.revision, key: `${kind}#1`, seq: 0, name: kind };
      const send = (key: string) =>
        kind === 'child'
          ? http()
              .post(`/v1/worker/runs/${id}/children`)
              .send({ ...step, key, workflow: 'echo', version: '1', wait: true, timeoutMs: 60_000 })
          : http()
              .post(`/v1/worker/runs/${id}/suspend`)
              .send({ ...step, key, kind, delayMs: 60_000, attempts: 1 });
      const first = await send(step.key).expect(200);
      expect(first.body).toMatchObject({ suspended: true, task: { key: step.key, kind, status: 'waiting' } });
      const again = await send(step.key).expect(200);
      expect(again.body).toEqual(first.body);
      const other = await send(`${kind}#2`).expect(409);
      expect(other.body.reason).toBe('revision_conflict');
      const [{ count }] = await db.sql<{ count: string }>(`SELECT count(*) FROM run_transitions WHERE run_id = $1 AND from_status = 'running'`, [id]);
      expect(count).toBe('1');
      expect(await db.sql<{ count: string }>('SELECT count(*) FROM runs WHERE parent_id = $1', [id])).toEqual([{ count: kind === 'child' ? '1' : '0' }]);
    },
  );

  it('records the first result of a task key; a later writer gets the stored one back', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const write = (output: number) =>
      http()
        .post(`/v1/worker/runs/${id}/tasks`)
        .send({ expectedRevision: run.revision, key: 'step#1', seq: 0, name: 'step', status: 'completed', attempts: 1, output })
        .expect(200);
    expect((await write(1)).body.task).toMatchObject({ key: 'step#1', output: 1 });
    expect((await write(2)).body.task).toMatchObject({ key: 'step#1', output: 1 });
    const [count] = await db.sql<{ count: string }>('SELECT count(*) FROM tasks WHERE run_id = $1', [id]);
    expect(count.count).toBe('1');
  });

  it('never changes a recorded step: a retry wait is re-armed, but no step replaces one of another kind', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    await http()
      .post(`/v1/worker/runs/${id}/tasks`)
      .send({ expectedRevision: run.revision, key: 'charge#1', seq: 0, name: 'charge', status: 'completed', attempts: 1, output: { charged: 42 } })
      .expect(200);
    const suspend = (revision: number, fields: object) =>
      http()
        .post(`/v1/worker/runs/${id}/suspend`)
        .send({ expectedRevision: revision, seq: 0, delayMs: 0, attempts: 1, ...fields });
    const steps = () => db.sql('SELECT key, kind, status, attempts, output FROM tasks WHERE run_id = $1 ORDER BY key', [id]);
    const recorded = await steps();

    // A hostile (or broken) worker names the recorded task's key in a retry wait, or in a sleep.
    for (const kind of ['retry', 'sleep']) {
      const refused = await suspend(run.revision, { key: 'charge#1', kind, name: 'charge' }).expect(409);
      expect(refused.body).toMatchObject({ statusCode: 409, reason: 'step_conflict' });
    }
    const child = await http()
      .post(`/v1/worker/runs/${id}/children`)
      .send({ expectedRevision: run.revision, key: 'charge#1', seq: 0, name: 'charge', workflow: 'echo', version: '1', wait: false })
      .expect(409);
    expect(child.body.reason).toBe('step_conflict');
    expect(await steps()).toEqual(recorded);
    expect(await db.sql('SELECT id FROM runs')).toEqual([{ id }]);
    expect((await http().get(`/v1/runs/${id}`).expect(200)).body).toMatchObject({ status: 'running', revision: run.revision });

    // The retry wait of a task is one step, re-armed each time the task waits again.
    const wait = async (revision: number, attempts: number) => {
      const response = await suspend(revision, { key: 'retry:ship#1', seq: 1, kind: 'retry', name: 'ship', attempts }).expect(200);
      expect(response.body).toMatchObject({ suspended: true, task: { key: 'retry:ship#1', kind: 'retry', attempts } });
      const [again] = await claim('w1', 1);
      return again;
    };
    const second = await wait(run.revision, 1);
    const third = await wait(second.revision, 2);
    expect(third.tasks).toEqual([
      expect.objectContaining({ key: 'charge#1', kind: 'task', status: 'completed', output: { charged: 42 } }),
      expect.objectContaining({ key: 'retry:ship#1', kind: 'retry', status: 'completed', attempts: 2, output: { attempts: 2 } }),
    ]);
  });

  it('hands a run whose claim went idle to another worker, which replays its recorded tasks; the old owner is fenced off', async () => {
    const [id] = await startRuns(1);
    const [first] = await claim('w-old', 1);
    await http()
      .post(`/v1/worker/runs/${id}/tasks`)
      .send({ expectedRevision: first.revision, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: { done: true } })
      .expect(200);

    // w-old stops heartbeating; after claimMinIdleTimeMs (1.5 s, judged by the database clock) the run is up for grabs.
    let stolen: ClaimedRun[] = [];
    const deadline = Date.now() + 10_000;
    while (stolen.length === 0 && Date.now() < deadline) stolen = await claim('w-new', 1, 500);
    expect(stolen).toHaveLength(1);
    expect(stolen[0]).toMatchObject({ id, revision: first.revision + 1 });
    expect(stolen[0].tasks).toEqual([{ key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: { done: true }, error: null }]);

    const heartbeat = await http()
      .post('/v1/worker/heartbeats')
      .send({ workerId: 'w-old', runs: [{ id, expectedRevision: first.revision }] })
      .expect(200);
    expect(heartbeat.body.lost).toEqual([id]);
    await http().post(`/v1/worker/runs/${id}/complete`).send({ expectedRevision: first.revision, output: 'zombie' }).expect(409);
    await http().post(`/v1/worker/runs/${id}/complete`).send({ expectedRevision: stolen[0].revision, output: 'fresh' }).expect(200);
    expect((await http().get(`/v1/runs/${id}`).expect(200)).body).toMatchObject({ status: 'completed', output: 'fresh' });
  });

  it('refreshes the claim with a task result only once its last refresh is older than a tenth of the idle time', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const refreshedAt = async () => (await db.sql<{ at: Date }>('SELECT heartbeat_at AS at FROM runs WHERE id = $1', [id]))[0].at.getTime();
    const record = (n: number) =>
      http()
        .post('/v1/worker/reports')
        .send({
          reports: [
            {
              type: 'task',
              runId: id,
              task: { expectedRevision: run.revision, key: `step#${n}`, seq: n, name: 'step', status: 'completed', attempts: 1, output: n },
            },
          ],
        })
        .expect(200);
    // Claimed just now: a result leaves the claim's refresh as it is (no row version of the run per step).
    const claimedAt = await refreshedAt();
    await record(1);
    expect(await refreshedAt()).toBe(claimedAt);
    // Refreshed 200 ms ago (more than 1,500 / 10): the next result refreshes it, as a heartbeat would.
    await db.sql(`UPDATE runs SET heartbeat_at = now() - interval '200 milliseconds' WHERE id = $1`, [id]);
    const stale = await refreshedAt();
    await record(2);
    expect(await refreshedAt()).toBeGreaterThan(stale + 150);
  });

  it('keeps a heartbeating claim from being stolen', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const until = Date.now() + 2_500;
    while (Date.now() < until) {
      const beat = await http()
        .post('/v1/worker/heartbeats')
        .send({ workerId: 'w1', runs: [{ id, expectedRevision: run.revision }] })
        .expect(200);
      expect(beat.body.lost).toEqual([]);
      expect(await claim('w2', 1, 400)).toEqual([]);
    }
  });

  it('applies coalesced reports together, each checked against its own run', async () => {
    const [idA, idB] = await startRuns(2);
    const claimed = await claim('w1', 2);
    const a = claimed.find((run) => run.id === idA)!;
    const b = claimed.find((run) => run.id === idB)!;
    const task = (expectedRevision: number) => ({ expectedRevision, key: 'step#1', seq: 0, name: 'step', status: 'completed', attempts: 1, output: 7 });
    const response = await http()
      .post('/v1/worker/reports')
      .send({
        reports: [
          { type: 'task', runId: a.id, task: task(a.revision) },
          { type: 'task', runId: b.id, task: task(b.revision - 1) },
          { type: 'complete', runId: a.id, complete: { expectedRevision: a.revision, output: 'a-done' } },
          { type: 'complete', runId: '01a22c37-316c-762f-a717-4521456009df', complete: { expectedRevision: 1, output: null } },
        ],
      })
      .expect(200);
    expect(response.body.outcomes).toEqual([
      { ok: true, result: expect.objectContaining({ key: 'step#1', output: 7 }) },
      expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
      { ok: true, result: { revision: a.revision + 1 } },
      expect.objectContaining({ ok: false, statusCode: 404, reason: 'run_not_found' }),
    ]);
    expect((await http().get(`/v1/runs/${a.id}`).expect(200)).body).toMatchObject({
      status: 'completed',
      output: 'a-done',
      tasks: [expect.objectContaining({ output: 7 })],
    });
    expect((await http().get(`/v1/runs/${b.id}`).expect(200)).body).toMatchObject({ status: 'running', revision: b.revision, tasks: [] });
  });

  it("applies runs' last task results with their outcomes in one statement, each pair standing or falling with its run", async () => {
    const [idA, idB, idC] = await startRuns(3);
    const claimed = await claim('w1', 3);
    const [a, b, c] = [idA, idB, idC].map((id) => claimed.find((run) => run.id === id)!);
    // C's step was recorded before (the answer to it was lost): the batch's record adopts it.
    await http().post(`/v1/worker/runs/${c.id}/tasks`).send(lastStep(c.revision, 9)).expect(200);
    // A's claim is due for a refresh, which its task result must not make: the finish updates that row.
    await db.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [a.id]);
    const reports = coordinator.app.get(ReportRepository);
    const together = jest.spyOn(reports, 'recordTasksAndFinish');
    try {
      const response = await http()
        .post('/v1/worker/reports')
        .send({
          reports: [
            { type: 'task', runId: a.id, task: lastStep(a.revision, 7) },
            { type: 'task', runId: b.id, task: lastStep(b.revision - 1, 7) },
            { type: 'task', runId: c.id, task: lastStep(c.revision, 7) },
            { type: 'complete', runId: a.id, complete: { expectedRevision: a.revision, output: 'a-done' } },
            { type: 'complete', runId: b.id, complete: { expectedRevision: b.revision - 1, output: 'zombie' } },
            { type: 'complete', runId: c.id, complete: { expectedRevision: c.revision, output: 'c-done' } },
          ],
        })
        .expect(200);
      expect(together).toHaveBeenCalledTimes(1);
      expect(response.body.outcomes).toEqual([
        { ok: true, result: expect.objectContaining({ key: 'step#1', output: 7 }) },
        expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
        { ok: true, result: expect.objectContaining({ key: 'step#1', output: 9 }) },
        { ok: true, result: { revision: a.revision + 1 } },
        expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
        { ok: true, result: { revision: c.revision + 1 } },
      ]);
    } finally {
      together.mockRestore();
    }
    expect((await http().get(`/v1/runs/${a.id}`).expect(200)).body).toMatchObject({
      status: 'completed',
      output: 'a-done',
      tasks: [expect.objectContaining({ output: 7 })],
    });
    expect((await http().get(`/v1/runs/${b.id}`).expect(200)).body).toMatchObject({ status: 'running', revision: b.revision, tasks: [] });
    expect((await http().get(`/v1/runs/${c.id}`).expect(200)).body).toMatchObject({
      status: 'completed',
      output: 'c-done',
      tasks: [expect.objectContaining({ output: 9 })],
    });
    expect(await db.sql(`SELECT heartbeat_at FROM runs WHERE id = $1`, [a.id])).toEqual([{ heartbeat_at: null }]);
    const ends = await db.sql(`SELECT run_id FROM run_transitions WHERE from_status = 'running' AND run_id = ANY($1) ORDER BY run_id`, [[a.id, b.id, c.id]]);
    expect(ends).toEqual([a.id, c.id].sort().map((run_id) => ({ run_id })));
  });

  it('wakes a waiting parent through the one-statement batch, and hands each waited-for run it ends to its result', async () => {
    const PARENT = [{ name: 'parent', version: '1' }];
    await http().post('/v1/runs').send({ workflow: 'parent', version: '1', input: {} }).expect(201);
    const [parent] = await claim('w-parent', 1, 0, PARENT);
    await http()
      .post(`/v1/worker/runs/${parent.id}/children`)
      .send({ expectedRevision: parent.revision, key: 'child:sub#1', seq: 0, name: 'sub', workflow: 'echo', version: '1', input: { child: true }, wait: true })
      .expect(200);
    const [other] = await startRuns(1);
    const claimed = await claim('w1', 2);
    const [{ id: childId }] = await db.sql<{ id: string }>('SELECT id FROM runs WHERE parent_id = $1', [parent.id]);
    const child = claimed.find((run) => run.id === childId)!;
    const sibling = claimed.find((run) => run.id === other)!;
    const waits = jest.spyOn(coordinator.app.get(ResultWaits), 'arm');
    const together = jest.spyOn(coordinator.app.get(ReportRepository), 'recordTasksAndFinish');
    try {
      // Before the batch ends both runs, the parent waits for its child on a claim only a NOTIFY can wake (the
      // poll is a minute; the claim waits 10 s), and a client waits for each run's result.
      const woken = claim('w-parent', 1, 10_000, PARENT);
      const results = [child, sibling].map((run) =>
        http()
          .get(`/v1/runs/${run.id}/result`)
          .query({ waitMs: 10_000 })
          .then((response) => response),
      );
      await eventually(
        'the claim and the results to wait',
        async () => coordinator.app.get(WaitingClaims).waiting('parent:1') > 0 && waits.mock.calls.length === 2,
      );
      await http()
        .post('/v1/worker/reports')
        .send({
          reports: [
            { type: 'task', runId: child.id, task: lastStep(child.revision, 1) },
            { type: 'task', runId: sibling.id, task: lastStep(sibling.revision, 2) },
            { type: 'complete', runId: child.id, complete: { expectedRevision: child.revision, output: 'child-done' } },
            { type: 'complete', runId: sibling.id, complete: { expectedRevision: sibling.revision, output: 'sibling-done' } },
          ],
        })
        .expect(200);
      expect(together).toHaveBeenCalledTimes(1);
      // The statement returned both ended runs, each with its step.
      const { outcomes } = await (together.mock.results[0].value as ReturnType<ReportRepository['recordTasksAndFinish']>);
      expect(outcomes).toEqual([
        expect.objectContaining({ run: { run: expect.objectContaining({ id: child.id, status: 'completed' }), hasSteps: true } }),
        expect.objectContaining({ run: { run: expect.objectContaining({ id: sibling.id, status: 'completed' }), hasSteps: true } }),
      ]);
      const [childResult, siblingResult] = await Promise.all(results);
      expect(childResult.body).toMatchObject({ status: 'completed', output: 'child-done', tasks: [expect.objectContaining({ output: 1 })] });
      expect(siblingResult.body).toMatchObject({ status: 'completed', output: 'sibling-done', tasks: [expect.objectContaining({ output: 2 })] });
      const [resumed] = await woken;
      expect(resumed).toMatchObject({ id: parent.id, revision: parent.revision + 2 });
      expect(resumed.tasks).toEqual([
        expect.objectContaining({
          key: 'child:sub#1',
          status: 'completed',
          output: { timedOut: false, childId, status: 'completed', output: 'child-done', error: null },
        }),
      ]);
    } finally {
      waits.mockRestore();
      together.mockRestore();
    }
  });

  it('refuses a stale outcome even when the current one for the same run is in the same batch', async () => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const response = await http()
      .post('/v1/worker/reports')
      .send({
        reports: [
          { type: 'complete', runId: id, complete: { expectedRevision: run.revision - 1, output: 'zombie' } },
          { type: 'complete', runId: id, complete: { expectedRevision: run.revision, output: 'current' } },
        ],
      })
      .expect(200);
    expect(response.body.outcomes).toEqual([expect.objectContaining({ ok: false, statusCode: 409 }), { ok: true, result: { revision: run.revision + 1 } }]);
    expect((await http().get(`/v1/runs/${id}`).expect(200)).body).toMatchObject({ status: 'completed', output: 'current' });
  });

  it.each([
    ['complete, then fail', 'complete', 'fail'],
    ['fail, then complete', 'fail', 'complete'],
  ] as const)('applies only the first of two outcomes for one run at one revision in a batch (%s); the second gets a 409', async (_, first, second) => {
    const [id] = await startRuns(1);
    const [run] = await claim('w1', 1);
    const outcome = (type: 'complete' | 'fail') =>
      type === 'complete'
        ? { type, runId: id, complete: { expectedRevision: run.revision, output: 'done' } }
        : { type, runId: id, fail: { expectedRevision: run.revision, error: { name: 'Error', message: 'broke' } } };
    const response = await http()
      .post('/v1/worker/reports')
      .send({ reports: [outcome(first), outcome(second)] })
      .expect(200);
    expect(response.body.outcomes).toEqual([
      { ok: true, result: { revision: run.revision + 1 } },
      expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
    ]);
    const finished =
      first === 'complete' ? { status: 'completed', output: 'done' } : { status: 'failed', error: expect.objectContaining({ message: 'broke' }) };
    expect((await http().get(`/v1/runs/${id}`).expect(200)).body).toMatchObject({ ...finished, revision: run.revision + 1 });
    const ends = await db.sql(`SELECT to_status FROM run_transitions WHERE run_id = $1 AND from_status = 'running'`, [id]);
    expect(ends).toEqual([{ to_status: finished.status }]);
  });

  describe('takes (wake-ups from a transport)', () => {
    const take = async (workerId: string, wakeups: string[]) =>
      (
        await http()
          .post('/v1/worker/takes')
          .send({ workerId, workflows: [{ ...ECHO[0], wakeups }] })
          .expect(200)
      ).body as {
        runs: ClaimedRun[];
        requeue: { queue: string; wakeup: string }[];
      };

    it("takes the queue's best runs, one per wake-up, each attributed to one; wake-ups for work already taken are done with", async () => {
      await startRuns(2);
      const taken = await take('w1', ['a', 'b', 'c']);
      expect(taken.runs.map((run) => run.wakeup).sort()).toEqual(['a', 'b']);
      expect(taken.requeue).toEqual([]);
      const attributed = await db.sql<{ id: string; claimed_via: string }>(`SELECT id, claimed_via FROM runs ORDER BY claimed_via`);
      expect(attributed.map((row) => [row.claimed_via, row.id])).toEqual(
        taken.runs.map((run) => [run.wakeup, run.id]).sort(([a], [b]) => String(a).localeCompare(String(b))),
      );
    });

    it('hands back a wake-up that took nothing while its queue still has a run waiting (its row locked elsewhere)', async () => {
      const [id] = await startRuns(1);
      const { Client } = await import('pg');
      const locker = new Client({ connectionString: db.url });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [id]); // as an event or a cancel would
        const blocked = await take('w1', ['a']);
        expect(blocked).toEqual({ runs: [], requeue: [{ queue: 'echo:1', wakeup: 'a' }] });
        await locker.query('COMMIT');
      } finally {
        await locker.end();
      }
      expect((await take('w1', ['a'])).runs.map((run) => run.id)).toEqual([id]);
    });
  });

  it('claims a parent whose child wait timed out in the statement that fails its stalled child, resolving the step once', async () => {
    const strict = await startCoordinator(db.url, { claimMinIdleTimeMs: 200, heartbeatIntervalMs: 100, maxStalls: 0 });
    try {
      const api = () => request(strict.url);
      const PARENT = [{ name: 'parent', version: '1' }];
      const CHAIN = [{ name: 'chain', version: '1' }];
      await api().post('/v1/runs').send({ workflow: 'parent', version: '1', input: {} }).expect(201);
      const [parent] = (await api().post('/v1/worker/claims').send({ workerId: 'w', workflows: PARENT, limit: 1 }).expect(200)).body.runs as ClaimedRun[];
      await api()
        .post(`/v1/worker/runs/${parent.id}/children`)
        .send({
          expectedRevision: parent.revision,
          key: 'child:sub#1',
          seq: 0,
          name: 'sub',
          workflow: 'chain',
          version: '1',
          input: { steps: 1 },
          wait: true,
          timeoutMs: 300,
        })
        .expect(200);
      const [{ id: childId }] = await db.sql<{ id: string }>(`SELECT id FROM runs WHERE parent_id = $1`, [parent.id]);
      await api().post('/v1/worker/claims').send({ workerId: 'doomed', workflows: CHAIN, limit: 1 }).expect(200);
      // Once the child's claim is idle and the parent's timeout has passed, one claim over both queues sees both.
      await eventually(
        'the child idle and the parent due',
        async () =>
          (
            await db.sql(
              `SELECT 1 FROM runs c JOIN runs p ON p.id = c.parent_id
            WHERE c.id = $1 AND c.heartbeat_at < now() - interval '200 milliseconds' AND p.due_at <= now()`,
              [childId],
            )
          ).length > 0,
      );
      const claimed = (
        await api()
          .post('/v1/worker/claims')
          .send({ workerId: 'w2', workflows: [...PARENT, ...CHAIN], limit: 5 })
          .expect(200)
      ).body.runs as ClaimedRun[];
      expect(claimed.map((run) => run.id)).toEqual([parent.id]);
      expect(claimed[0].tasks).toEqual([expect.objectContaining({ key: 'child:sub#1', status: 'completed', output: { timedOut: true } })]);
      expect((await api().get(`/v1/runs/${childId}`).expect(200)).body).toMatchObject({ status: 'failed', error: { reason: 'stalled' } });
    } finally {
      await strict.close();
    }
  });

  it('404s a write to an unknown run and 400s a malformed id', async () => {
    await http().post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/complete').send({ expectedRevision: 1, output: null }).expect(404);
    const response = await http().post('/v1/worker/runs/not-a-uuid/complete').send({ expectedRevision: 1 }).expect(400);
    expect(response.body.reason).toBe('invalid_run_id');
  });
});
