import { JSON_DOCUMENT_MAX_DEPTH, JSON_MAX_DEPTH } from '@nest-durable/client';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { STATUS_CODES } from 'node:http';
import { Client } from 'pg';
import request from 'supertest';
import { ResultWaits } from '../apps/coordinator/src/hand-off/result-waits.service';
import { RunsRepository } from '../apps/coordinator/src/runs/runs.repository';
import { ReportRepository } from '@app/run-store';
import { NotificationListener, type PendingWait, RUN_FINISHED_CHANNEL } from '../libs/outbox/src';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { snapshotTables } from './support/snapshot';

/** JSON text of arrays nested `depth` levels deep (built as text: a value that deep is what we refuse to recurse into). */
function nested(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** The client API of the coordinator against real PostgreSQL (no worker: runs stay where the test puts them). */
describe('runs API', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;

  beforeAll(async () => {
    db = await createTestDatabase('runs_api');
    coordinator = await startCoordinator(db.url);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const start = (body: object) => http().post('/v1/runs').send(body);
  /** Starts a run of `workflow` and claims it as worker `w`: the run as the claim returned it. */
  const startClaimed = async (workflow: string, body: object = {}) => {
    await start({ workflow, version: '1', ...body }).expect(201);
    const claim = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'w', workflows: [{ name: workflow, version: '1' }], limit: 1 })
      .expect(200);
    return claim.body.runs[0] as { id: string; revision: number };
  };
  /** Counts the calls of settled() on the result waits armed from now on (a wait held by a finish under way). */
  const countSettles = () => {
    const resultWaits = coordinator.app.get(ResultWaits);
    const arm = resultWaits.arm.bind(resultWaits);
    const settles: number[] = [];
    jest.spyOn(resultWaits, 'arm').mockImplementation((runId) => {
      const wait = arm(runId);
      const settled = wait.settled.bind(wait);
      wait.settled = (timeoutMs) => {
        settles.push(timeoutMs);
        return settled(timeoutMs);
      };
      return wait;
    });
    return settles;
  };

  it('dedupes by idempotency key per workflow: 201 first, then 200 with the same run', async () => {
    const body = { workflow: 'echo', version: '1', input: { n: 1 }, idempotencyKey: 'order-42' };
    const first = await start(body).expect(201);
    const second = await start({ ...body, input: { n: 2 } }).expect(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.input).toEqual({ n: 1 });
    // The same key under another workflow is another run.
    const other = await start({ ...body, workflow: 'chain' }).expect(201);
    expect(other.body.id).not.toBe(first.body.id);
  });

  it('creates exactly one run when the same idempotency key races', async () => {
    const body = { workflow: 'echo', version: '1', idempotencyKey: 'race' };
    const responses = await Promise.all(Array.from({ length: 12 }, () => start(body)));
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(11);
    expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
  });

  it('starts a batch of runs in one request, deduplicating idempotency keys', async () => {
    const existing = await start({ workflow: 'echo', version: '1', idempotencyKey: 'batch-dup' }).expect(201);
    const response = await http()
      .post('/v1/runs/batch')
      .send({
        runs: [
          { workflow: 'echo', version: '1', input: 1 },
          { workflow: 'echo', version: '1', idempotencyKey: 'batch-dup' },
          { workflow: 'chain', version: '1', input: { steps: 1 }, priority: 3 },
        ],
      })
      .expect(201);
    expect(response.body.runs).toHaveLength(3);
    expect(response.body.runs[0]).toMatchObject({ workflow: 'echo', input: 1, status: 'queued' });
    expect(response.body.runs[1].id).toBe(existing.body.id);
    expect(response.body.runs[2]).toMatchObject({ workflow: 'chain', priority: 3 });
    const bad = await http()
      .post('/v1/runs/batch')
      .send({
        runs: [
          { workflow: 'echo', version: '1' },
          { workflow: 'bad:name', version: '1' },
        ],
      })
      .expect(400);
    expect(bad.body.reason).toBe('invalid_workflow');
  });

  it('gets a run with its tasks, and 404s an unknown one', async () => {
    const created = await start({ workflow: 'echo', version: '1', input: 'x' }).expect(201);
    const run = await http().get(`/v1/runs/${created.body.id}`).expect(200);
    expect(run.body).toMatchObject({
      id: created.body.id,
      status: 'queued',
      revision: 0,
      attempt: 1,
      input: 'x',
      output: null,
      error: null,
      tasks: [],
    });
    const missing = await http().get('/v1/runs/01a22c37-316c-762f-a717-4521456009df').expect(404);
    expect(missing.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      reason: 'run_not_found',
      message: 'run 01a22c37-316c-762f-a717-4521456009df does not exist',
    });
  });

  it('lists runs newest first in pages, filtered by workflow and status', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await start({ workflow: 'listed', version: '1', input: i }).expect(201)).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string> = { workflow: 'listed', limit: '3' };
      if (cursor) query.cursor = cursor;
      const page = await http().get('/v1/runs').query(query).expect(200);
      seen.push(...page.body.runs.map((run: { id: string }) => run.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    await http().post(`/v1/runs/${ids[0]}/cancel`).expect(200);
    const cancelled = await http().get('/v1/runs').query({ workflow: 'listed', status: 'cancelled' }).expect(200);
    expect(cancelled.body.runs.map((run: { id: string }) => run.id)).toEqual([ids[0]]);
  });

  it('lists runs by version, by idempotency key and by creation time (a range of their time-ordered ids)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push((await start({ workflow: 'ranged', version: i % 2 ? '2' : '1', idempotencyKey: `key-${i}` }).expect(201)).body.id);
    }
    const list = async (query: Record<string, string>) =>
      (
        (
          await http()
            .get('/v1/runs')
            .query({ workflow: 'ranged', ...query })
            .expect(200)
        ).body.runs as { id: string }[]
      ).map((run) => run.id);
    expect(await list({ version: '2' })).toEqual([ids[5], ids[3], ids[1]]);
    expect(await list({ idempotencyKey: 'key-4' })).toEqual([ids[4]]);
    // A UUIDv7 starts with its creation millisecond: the range's edges are the times of runs 2 and 5.
    const msOf = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    const after = msOf(ids[2]);
    const before = msOf(ids[5]);
    const expected = ids.filter((id) => msOf(id) >= after && msOf(id) < before).reverse();
    const range = { createdAfter: new Date(after).toISOString(), createdBefore: new Date(before).toISOString() };
    expect(await list(range)).toEqual(expected);
    expect(expected).toContain(ids[2]);
    // Paged inside the range: the cursor and the range's end together.
    expect(await list({ ...range, cursor: ids[3] })).toEqual(expected.filter((id) => id < ids[3]));
  });

  it('cancels a run that is not terminal, then refuses with 409', async () => {
    const created = await start({ workflow: 'echo', version: '1' }).expect(201);
    const cancelled = await http().post(`/v1/runs/${created.body.id}/cancel`).expect(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', revision: 1 });
    expect(cancelled.body.finishedAt).not.toBeNull();
    const again = await http().post(`/v1/runs/${created.body.id}/cancel`).expect(409);
    expect(again.body.reason).toBe('run_terminal');
    await http().post('/v1/runs/01a22c37-316c-762f-a717-4521456009df/cancel').expect(404);
  });

  it('fences off the worker of a cancelled running run', async () => {
    const created = await start({ workflow: 'fenced', version: '1' }).expect(201);
    const claim = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'w', workflows: [{ name: 'fenced', version: '1' }], limit: 1 })
      .expect(200);
    const [run] = claim.body.runs;
    await http().post(`/v1/runs/${created.body.id}/cancel`).expect(200);
    await http().post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: run.revision, output: 1 }).expect(409);
    expect((await http().get(`/v1/runs/${run.id}`)).body.status).toBe('cancelled');
  });

  it('result long-polls until the run finishes (woken by NOTIFY)', async () => {
    const created = await start({ workflow: 'waited', version: '1' }).expect(201);
    const claim = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'w', workflows: [{ name: 'waited', version: '1' }], limit: 1 })
      .expect(200);
    const [run] = claim.body.runs;
    // Parked once it armed its wait for the run's end and its read (after the arming) found the run running.
    const waits = jest.spyOn(coordinator.app.get(NotificationListener), 'waitFor');
    const reads = jest.spyOn(coordinator.app.get(RunsRepository), 'findById');
    const parked = http()
      .get(`/v1/runs/${run.id}/result`)
      .query({ waitMs: 30_000 })
      .then((response) => response);
    await eventually('the result to read the run', async () => reads.mock.results.length > 0);
    await reads.mock.results[0].value;
    const [wait] = waits.mock.results.filter((_, i) => waits.mock.calls[i][0] === RUN_FINISHED_CHANNEL).map((r) => r.value as PendingWait);
    waits.mockRestore();
    reads.mockRestore();
    await http()
      .post(`/v1/worker/runs/${run.id}/complete`)
      .send({ expectedRevision: run.revision, output: { ok: 1 } })
      .expect(200);
    expect(await wait.notified).toBe(true); // woken by the end, not answered by its first read
    const result = await parked;
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ id: created.body.id, status: 'completed', output: { ok: 1 } });
  });

  it('result of a run finished on this coordinator is the ended run its finish handed over (no read after the end), as a GET shows it', async () => {
    const claimed = (workflow: string) => startClaimed(workflow, { input: { n: 1 }, tags: { team: 'a' } });
    const task = (revision: number) => ({
      expectedRevision: revision,
      key: 'a#0',
      seq: 0,
      name: 'a',
      status: 'completed',
      attempts: 1,
      output: { b: 1, a: 2 },
      error: null,
    });
    const stepless = await claimed('handed-plain');
    const stepped = await claimed('handed-steps');
    const failing = await claimed('handed-failed');
    await http().post(`/v1/worker/runs/${stepped.id}/tasks`).send(task(stepped.revision)).expect(200);
    const repository = coordinator.app.get(RunsRepository);
    const reads = jest.spyOn(repository, 'findById');
    const taskReads = jest.spyOn(repository, 'findTasks');
    try {
      const waited = [stepless, stepped, failing].map((run) =>
        http()
          .get(`/v1/runs/${run.id}/result`)
          .query({ waitMs: 30_000 })
          .then((response) => response),
      );
      // Each wait read its run once (running) and parked.
      await eventually('the waits to read their runs', async () => reads.mock.results.length === 3);
      await Promise.all(reads.mock.results.map((result) => result.value));
      await http()
        .post(`/v1/worker/runs/${stepless.id}/complete`)
        .send({ expectedRevision: stepless.revision, output: { z: 1, y: [2] } })
        .expect(200);
      // The stepped run's last task result and its outcome in one batch (one transaction), as a worker sends them.
      await http()
        .post('/v1/worker/reports')
        .send({
          reports: [
            { type: 'task', runId: stepped.id, task: { ...task(stepped.revision), key: 'b#1', seq: 1, name: 'b' } },
            { type: 'complete', runId: stepped.id, complete: { expectedRevision: stepped.revision, output: 'done' } },
          ],
        })
        .expect(200);
      await http()
        .post(`/v1/worker/runs/${failing.id}/fail`)
        .send({ expectedRevision: failing.revision, error: { name: 'Error', message: 'no' } })
        .expect(200);
      const results = await Promise.all(waited);
      expect(reads.mock.calls).toEqual([[stepless.id], [stepped.id], [failing.id]]);
      // Only the run with steps read them, once.
      expect(taskReads.mock.calls).toEqual([[stepped.id]]);
      // Restored before the GETs below, which read too (the finally is for a failure before this).
      reads.mockRestore();
      taskReads.mockRestore();
      for (const [i, run] of [stepless, stepped, failing].entries()) {
        expect(results[i].status).toBe(200);
        expect(results[i].body).toEqual((await http().get(`/v1/runs/${run.id}`).expect(200)).body);
      }
      expect(results.map((result) => result.body.status)).toEqual(['completed', 'completed', 'failed']);
      expect(results[0].body.tasks).toEqual([]);
      expect(results[1].body.tasks.map((step: { key: string }) => step.key)).toEqual(['a#0', 'b#1']);
    } finally {
      reads.mockRestore();
      taskReads.mockRestore();
    }
  });

  it.each([
    ['completed', 'complete', { output: 7 }, { output: 7 }, 0],
    // A failed run can be retried between its end and a wait armed after its finish statement: that wait reads.
    ['failed', 'fail', { error: { name: 'Error', message: 'no' } }, { error: { message: 'no' } }, 1],
  ] as const)(
    'result armed while a finish of its run is under way here waits for that finish instead of reading; a run it %s',
    async (status, path, body, shown, readsAfter) => {
      const run = await startClaimed(`held-${path}`);
      // The finish waits for this session's lock on the run; the result's wait is armed meanwhile.
      const holder = new Client({ connectionString: db.url });
      await holder.connect();
      const repository = coordinator.app.get(RunsRepository);
      const reads = jest.spyOn(repository, 'findById');
      const taskReads = jest.spyOn(repository, 'findTasks');
      const settles = countSettles();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [run.id]);
        const finished = http()
          .post(`/v1/worker/runs/${run.id}/${path}`)
          .send({ expectedRevision: run.revision, ...body })
          .then((response) => response);
        await eventually('the finish to wait for the lock', async () => {
          const [blocked] = await db.sql<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return blocked.n === 1;
        });
        const waited = http()
          .get(`/v1/runs/${run.id}/result`)
          .query({ waitMs: 30_000 })
          .then((response) => response);
        await eventually('the wait to be held by the finish', async () => settles.length > 0);
        expect(reads).not.toHaveBeenCalled();
        await holder.query('COMMIT');
        expect((await finished).status).toBe(200);
        const result = await waited;
        expect(result.status).toBe(200);
        expect(result.body).toMatchObject({ id: run.id, status, ...shown, tasks: [] });
        // A completed run is the one its finish returned (this request's only run): nothing read. A failed
        // one is read once, after the end, with its steps beside it (it knew the run had ended).
        expect(reads.mock.calls).toEqual(readsAfter ? [[run.id]] : []);
        expect(taskReads.mock.calls).toEqual(readsAfter ? [[run.id]] : []);
        jest.restoreAllMocks();
        expect(result.body).toEqual((await http().get(`/v1/runs/${run.id}`).expect(200)).body);
      } finally {
        jest.restoreAllMocks();
        await holder.end();
      }
    },
  );

  it('result armed after the statement of a lone completion, before its answer, gets the run that finish returned: only its steps are read', async () => {
    const run = await startClaimed('late-wait');
    const step = { expectedRevision: run.revision, key: 'a#0', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1, error: null };
    const reports = coordinator.app.get(ReportRepository);
    const recordTasksAndFinish = reports.recordTasksAndFinish.bind(reports);
    let committed!: () => void;
    const hasCommitted = new Promise<void>((resolve) => (committed = resolve));
    let answer!: () => void;
    const mayAnswer = new Promise<void>((resolve) => (answer = resolve));
    // The batch's statement (its task result and its finish, committing on its own) is done; the request goes on
    // once the result's wait is armed and held.
    jest.spyOn(reports, 'recordTasksAndFinish').mockImplementation(async (...args) => {
      const results = await recordTasksAndFinish(...args);
      committed();
      await mayAnswer;
      return results;
    });
    const repository = coordinator.app.get(RunsRepository);
    const reads = jest.spyOn(repository, 'findById');
    const taskReads = jest.spyOn(repository, 'findTasks');
    const settles = countSettles();
    try {
      // The run's last task result and its outcome in one batch, as a worker sends them: the request ends one run.
      const reported = http()
        .post('/v1/worker/reports')
        .send({
          reports: [
            { type: 'task', runId: run.id, task: step },
            { type: 'complete', runId: run.id, complete: { expectedRevision: run.revision, output: 'late' } },
          ],
        })
        .then((response) => response);
      await hasCommitted;
      const waited = http()
        .get(`/v1/runs/${run.id}/result`)
        .query({ waitMs: 30_000 })
        .then((response) => response);
      await eventually('the wait to be held by the finish', async () => settles.length > 0);
      answer();
      expect((await reported).status).toBe(200);
      const result = await waited;
      expect(result.status).toBe(200);
      expect(result.body).toMatchObject({ id: run.id, status: 'completed', output: 'late' });
      expect(result.body.tasks.map((task: { key: string }) => task.key)).toEqual(['a#0']);
      expect(reads).not.toHaveBeenCalled();
      expect(taskReads.mock.calls).toEqual([[run.id]]);
      jest.restoreAllMocks();
      expect(result.body).toEqual((await http().get(`/v1/runs/${run.id}`).expect(200)).body);
    } finally {
      answer();
      jest.restoreAllMocks();
    }
  });

  it('result returns on time, the run as it is, while a finish of it here is held up (and a refused one holds nothing)', async () => {
    const run = await startClaimed('held-past-wait');
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [run.id]);
      const waited = http()
        .get(`/v1/runs/${run.id}/result`)
        .query({ waitMs: 300 })
        .then((response) => response);
      const completed = http()
        .post(`/v1/worker/runs/${run.id}/complete`)
        .send({ expectedRevision: run.revision, output: 1 })
        .then((response) => response);
      // The lock is held until the result is in: a wait held by the finish would never answer.
      const result = await waited;
      expect(result.status).toBe(200);
      expect(result.body.status).toBe('running');
      await holder.query('COMMIT');
      expect((await completed).status).toBe(200);
    } finally {
      await holder.end();
    }
    // A stale finish of the ended run is refused; a wait armed meanwhile answers with the run as it is.
    const refused = http().post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: run.revision, output: 2 });
    const after = http().get(`/v1/runs/${run.id}/result`).query({ waitMs: 30_000 });
    const [stale, done] = await Promise.all([refused, after]);
    expect(stale.status).toBe(409);
    expect(done.body).toMatchObject({ status: 'completed', output: 1 });
  });

  it('result returns the run as it is once waitMs passes', async () => {
    const created = await start({ workflow: 'echo', version: '1' }).expect(201);
    const result = await http().get(`/v1/runs/${created.body.id}/result`).query({ waitMs: 200 }).expect(200);
    expect(result.body.status).toBe('queued');
  });

  it('takes a request without a body where none is needed, and JSON with a charset or a +json type', async () => {
    const created = await start({ workflow: 'echo', version: '1' }).expect(201);
    // fetch sends `content-length: 0` and no content type for a POST without a body.
    const event = await fetch(`${coordinator.url}/v1/runs/${created.body.id}/events/ping`, { method: 'POST' });
    expect(event.status).toBe(202);
    expect(await event.json()).toEqual({ delivered: false });
    await http().post(`/v1/runs/${created.body.id}/events/ping`).set('content-type', 'application/json; charset=utf-8').send('{"data":1}').expect(202);
    await http().post(`/v1/runs/${created.body.id}/events/ping`).set('content-type', 'application/merge-patch+json').send('{"data":2}').expect(202);
    const events = await db.sql<{ data: unknown }>('SELECT data FROM run_events WHERE run_id = $1 ORDER BY id', [created.body.id]);
    expect(events.map((row) => row.data)).toEqual([null, 1, 2]);
    const cancelled = await fetch(`${coordinator.url}/v1/runs/${created.body.id}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(200);
  });

  it(`accepts a document nested to its depth limit (${JSON_DOCUMENT_MAX_DEPTH} levels) in a start, and from a worker as the run's output`, async () => {
    const input = nested(JSON_DOCUMENT_MAX_DEPTH);
    const created = await http()
      .post('/v1/runs')
      .set('content-type', 'application/json')
      .send(`{"workflow":"echo","version":"1","input":${input}}`)
      .expect(201);
    expect(JSON.stringify(created.body.input)).toBe(input);
    const [run] = (
      await http()
        .post('/v1/worker/claims')
        .send({ workerId: 'w', workflows: [{ name: 'echo', version: '1' }], limit: 1 })
        .expect(200)
    ).body.runs;
    // The deepest envelope a document travels in: a report of a batch, with the input echoed as the output.
    await http()
      .post('/v1/worker/reports')
      .set('content-type', 'application/json')
      .send(`{"reports":[{"type":"complete","runId":"${run.id}","complete":{"expectedRevision":${run.revision},"output":${input}}}]}`)
      .expect(200);
    expect(JSON.stringify((await http().get(`/v1/runs/${run.id}`).expect(200)).body.output)).toBe(input);
  });

  describe('refuses bad input with a clear error (400 unless said) and changes nothing', () => {
    const RUN = '01a22c37-316c-762f-a717-4521456009df';
    const task = (fields: object) =>
      http()
        .post(`/v1/worker/runs/${RUN}/tasks`)
        .send({ expectedRevision: 1, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, ...fields });
    const suspend = (fields: object) =>
      http()
        .post(`/v1/worker/runs/${RUN}/suspend`)
        .send({ expectedRevision: 1, key: 'k', seq: 0, kind: 'sleep', name: 'n', delayMs: 1, ...fields });
    const child = (fields: object) =>
      http()
        .post(`/v1/worker/runs/${RUN}/children`)
        .send({ expectedRevision: 1, key: 'c', seq: 0, name: 'c', workflow: 'echo', version: '1', wait: true, ...fields });
    const raw = (path: string, body: string, type = 'application/json') => http().post(path).set('content-type', type).send(body);
    // Every JSON endpoint, with a body that is valid but for one deep value: the 8 that read a JSON document
    // (input, output, data, error) recursed into it; the depth check comes before anything reads the body.
    const deep = nested(5_000);
    const deepBodies: [string, string][] = [
      ['/v1/runs', `{"workflow":"echo","version":"1","input":${deep}}`],
      ['/v1/runs/batch', `{"runs":[{"workflow":"echo","version":"1","input":${deep}}]}`],
      [`/v1/runs/${RUN}/events/e`, `{"data":${deep}}`],
      [`/v1/worker/runs/${RUN}/tasks`, `{"expectedRevision":1,"key":"a#1","seq":0,"name":"a","status":"completed","attempts":1,"output":${deep}}`],
      ['/v1/worker/reports', `{"reports":[{"type":"complete","runId":"${RUN}","complete":{"expectedRevision":1,"output":${deep}}}]}`],
      [`/v1/worker/runs/${RUN}/complete`, `{"expectedRevision":1,"output":${deep}}`],
      [`/v1/worker/runs/${RUN}/fail`, `{"expectedRevision":1,"error":{"message":"m","stack":${deep}}}`],
      [`/v1/worker/runs/${RUN}/children`, `{"expectedRevision":1,"key":"c","seq":0,"name":"c","workflow":"echo","version":"1","wait":true,"input":${deep}}`],
      ['/v1/worker/claims', `{"workerId":"w","workflows":${deep},"limit":1}`],
      ['/v1/worker/takes', `{"workerId":"w","workflows":${deep}}`],
      ['/v1/worker/heartbeats', `{"workerId":"w","runs":${deep}}`],
      [`/v1/worker/runs/${RUN}/suspend`, `{"expectedRevision":1,"key":"k","seq":0,"kind":"sleep","name":"n","delayMs":${deep}}`],
      [`/v1/worker/runs/${RUN}/release`, `{"expectedRevision":${deep}}`],
    ];
    const cases: [string, () => request.Test, string, number?][] = [
      ['missing workflow', () => start({ version: '1' }), 'invalid_workflow'],
      ['empty workflow', () => start({ workflow: '', version: '1' }), 'invalid_workflow'],
      ['workflow with a colon', () => start({ workflow: 'a:b', version: '1' }), 'invalid_workflow'],
      ['overlong workflow', () => start({ workflow: 'w'.repeat(129), version: '1' }), 'invalid_workflow'],
      ['control character in version', () => start({ workflow: 'echo', version: '1\n' }), 'invalid_version'],
      ['unknown field', () => start({ workflow: 'echo', version: '1', inptu: {} }), 'unknown_field'],
      ['NUL in input', () => start({ workflow: 'echo', version: '1', input: { a: 'x\u0000y' } }), 'json_nul_character'],
      ['NUL in input key', () => start({ workflow: 'echo', version: '1', input: { 'a\u0000': 1 } }), 'json_nul_character'],
      ['empty idempotency key', () => start({ workflow: 'echo', version: '1', idempotencyKey: '' }), 'invalid_idempotencyKey'],
      ['fractional priority', () => start({ workflow: 'echo', version: '1', priority: 1.5 }), 'invalid_priority'],
      ['priority out of range', () => start({ workflow: 'echo', version: '1', priority: 10_000 }), 'invalid_priority'],
      ['bad runAt', () => start({ workflow: 'echo', version: '1', runAt: 'tomorrow' }), 'invalid_runAt'],
      ['runAt out of range', () => start({ workflow: 'echo', version: '1', runAt: '-010000-01-01T00:00:00Z' }), 'invalid_runAt'],
      ['runAt on a day the calendar has not', () => start({ workflow: 'echo', version: '1', runAt: '2030-02-30T00:00:00Z' }), 'invalid_runAt'],
      ['runAt without its offset', () => start({ workflow: 'echo', version: '1', runAt: '2030-06-01T10:00:00' }), 'invalid_runAt'],
      ['lone surrogate in input', () => start({ workflow: 'echo', version: '1', input: { a: 'x\ud800' } }), 'json_invalid_unicode'],
      ['bad shard', () => start({ workflow: 'echo', version: '1', shard: 'eu west' }), 'invalid_shard'],
      ['empty batch', () => http().post('/v1/runs/batch').send({ runs: [] }), 'invalid_runs'],
      ['array body', () => http().post('/v1/runs').send([1]), 'invalid_body'],
      ['malformed JSON', () => http().post('/v1/runs').set('content-type', 'application/json').send('{"workflow":'), 'invalid_json'],
      ['malformed run id', () => http().get('/v1/runs/123'), 'invalid_run_id'],
      ['SQL in run id', () => http().get("/v1/runs/1'%20OR%201=1--"), 'invalid_run_id'],
      ['negative waitMs', () => http().get('/v1/runs/01a22c37-316c-762f-a717-4521456009df/result?waitMs=-1'), 'invalid_waitMs'],
      ['bad list limit', () => http().get('/v1/runs?limit=0'), 'invalid_limit'],
      ['list by idempotency key without a workflow', () => http().get('/v1/runs?idempotencyKey=k'), 'invalid_idempotencyKey'],
      ['bad createdAfter', () => http().get('/v1/runs?createdAfter=yesterday'), 'invalid_createdAfter'],
      ['bad list status', () => http().get('/v1/runs?status=done'), 'invalid_status'],
      ['bad cursor', () => http().get('/v1/runs?cursor=abc'), 'invalid_cursor'],
      ['unknown query field', () => http().get('/v1/runs?sort=asc'), 'unknown_field'],
      ['claim without workflows', () => http().post('/v1/worker/claims').send({ workerId: 'w', workflows: [], limit: 1 }), 'invalid_workflows'],
      [
        'claim limit 0',
        () =>
          http()
            .post('/v1/worker/claims')
            .send({ workerId: 'w', workflows: [{ name: 'e', version: '1' }], limit: 0 }),
        'invalid_limit',
      ],
      [
        'claim without workerId',
        () =>
          http()
            .post('/v1/worker/claims')
            .send({ workflows: [{ name: 'e', version: '1' }], limit: 1 }),
        'invalid_workerId',
      ],
      [
        'control character in workerId',
        () =>
          http()
            .post('/v1/worker/claims')
            .send({ workerId: 'w\u0007', workflows: [{ name: 'e', version: '1' }], limit: 1 }),
        'invalid_workerId',
      ],
      [
        'take without wake-ups',
        () =>
          http()
            .post('/v1/worker/takes')
            .send({ workerId: 'w', workflows: [{ name: 'echo', version: '1', wakeups: [] }] }),
        'invalid_wakeups',
      ],
      [
        'heartbeat with a negative revision',
        () =>
          http()
            .post('/v1/worker/heartbeats')
            .send({ workerId: 'w', runs: [{ id: '01a22c37-316c-762f-a717-4521456009df', expectedRevision: -1 }] }),
        'invalid_expectedRevision',
      ],
      [
        'task without seq',
        () =>
          http()
            .post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/tasks')
            .send({ expectedRevision: 1, key: 'a#1', name: 'a', status: 'completed', attempts: 1 }),
        'invalid_seq',
      ],
      [
        'task output with NUL',
        () =>
          http()
            .post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/tasks')
            .send({ expectedRevision: 1, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: '\u0000' }),
        'json_nul_character',
      ],
      [
        'suspend of an unknown kind',
        () =>
          http()
            .post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/suspend')
            .send({ expectedRevision: 1, key: 'k', seq: 0, kind: 'nap', name: 'n', delayMs: 1 }),
        'invalid_kind',
      ],
      ['event with a bad name', () => http().post('/v1/runs/01a22c37-316c-762f-a717-4521456009df/events/a%20b').send({}), 'invalid_event_name'],
      ...deepBodies.map(([path, body]): [string, () => request.Test, string] => [`JSON nested 5,000 deep to ${path}`, () => raw(path, body), 'json_too_deep']),
      ['a body one level past the depth limit', () => raw('/v1/runs', `{"workflow":"echo","version":"1","input":${nested(JSON_MAX_DEPTH)}}`), 'json_too_deep'],
      [
        'run input one level past the document depth limit, in a body within its own',
        () => raw('/v1/runs', `{"workflow":"echo","version":"1","input":${nested(JSON_DOCUMENT_MAX_DEPTH + 1)}}`),
        'json_too_deep',
      ],
      [
        'event data one level past the document depth limit',
        () => raw(`/v1/runs/${RUN}/events/ping`, `{"data":${nested(JSON_DOCUMENT_MAX_DEPTH + 1)}}`),
        'json_too_deep',
      ],
      [
        'task output nested too deep in a report',
        () => raw('/v1/worker/reports', `{"reports":[{"type":"task","runId":"${RUN}","task":{"output":${nested(JSON_MAX_DEPTH)}}}]}`),
        'json_too_deep',
      ],
      ['lone high surrogate in idempotency key', () => start({ workflow: 'echo', version: '1', idempotencyKey: 'k-\ud800' }), 'invalid_idempotencyKey'],
      ['lone low surrogate in idempotency key', () => start({ workflow: 'echo', version: '1', idempotencyKey: 'k-\udfff' }), 'invalid_idempotencyKey'],
      [
        'lone surrogate in an idempotency key of a batch',
        () =>
          http()
            .post('/v1/runs/batch')
            .send({ runs: [{ workflow: 'echo', version: '1', idempotencyKey: '\udc00' }] }),
        'invalid_idempotencyKey',
      ],
      [
        'lone surrogate in workerId',
        () =>
          http()
            .post('/v1/worker/claims')
            .send({ workerId: 'w\ud800', workflows: [{ name: 'e', version: '1' }], limit: 1 }),
        'invalid_workerId',
      ],
      ['lone surrogate in a heartbeat workerId', () => http().post('/v1/worker/heartbeats').send({ workerId: '\udfff', runs: [] }), 'invalid_workerId'],
      [
        'lone surrogate in a take workerId',
        () =>
          http()
            .post('/v1/worker/takes')
            .send({ workerId: '\udfff', workflows: [{ name: 'echo', version: '1', wakeups: ['a'] }] }),
        'invalid_workerId',
      ],
      ['lone surrogate in a task key', () => task({ key: 'tx-\udfff' }), 'invalid_key'],
      ['lone surrogate in a task name', () => task({ name: 'a\ud800' }), 'invalid_name'],
      [
        'lone surrogate in a reported task key',
        () =>
          http()
            .post('/v1/worker/reports')
            .send({
              reports: [{ type: 'task', runId: RUN, task: { expectedRevision: 1, key: 'tx-\udfff', seq: 0, name: 'tx', status: 'completed', attempts: 1 } }],
            }),
        'invalid_key',
      ],
      ['lone surrogate in a suspend key', () => suspend({ key: 'sleep:n#1\ud800' }), 'invalid_key'],
      ['lone surrogate in a retry step name', () => suspend({ kind: 'retry', name: '\udbff' }), 'invalid_name'],
      ['lone surrogate in an event step name', () => suspend({ kind: 'event', name: 'e\udc00' }), 'invalid_name'],
      ['lone surrogate in a child key', () => child({ key: '\ud800' }), 'invalid_key'],
      ['lone surrogate in a child step name', () => child({ name: '\udfff' }), 'invalid_name'],
      ['event name that is not UTF-8', () => http().post(`/v1/runs/${RUN}/events/%ED%A0%80`).send({}), 'invalid_url_encoding'],
      ['event sent as text/plain', () => raw(`/v1/runs/${RUN}/events/e`, 'approved', 'text/plain'), 'unsupported_media_type', 415],
      ['event sent as a form', () => raw(`/v1/runs/${RUN}/events/e`, 'data=1', 'application/x-www-form-urlencoded'), 'unsupported_media_type', 415],
      ['run start sent as text/plain', () => raw('/v1/runs', '{"workflow":"echo","version":"1"}', 'text/plain'), 'unsupported_media_type', 415],
      ['body without a content type', () => http().post('/v1/runs').send(Buffer.from('{"workflow":"echo","version":"1"}')), 'unsupported_media_type', 415],
      ['worker report sent as a form', () => raw('/v1/worker/reports', 'reports=1', 'application/x-www-form-urlencoded'), 'unsupported_media_type', 415],
      [
        'JSON in a charset other than UTF-8',
        () => raw('/v1/runs', '{"workflow":"echo","version":"1"}', 'application/json; charset=latin1'),
        'unsupported_media_type',
        415,
      ],
    ];

    it('refuses a body over the size limit with 413', async () => {
      const before = await snapshotTables(db);
      const response = await start({ workflow: 'echo', version: '1', input: 'x'.repeat(3 * 1024 * 1024) });
      expect(response.status).toBe(413);
      expect(response.body).toMatchObject({ statusCode: 413, reason: 'payload_too_large' });
      expect(await snapshotTables(db)).toEqual(before);
    });

    it.each(cases)('%s', async (_name, send, reason, status = 400) => {
      const before = await snapshotTables(db);
      const response = await send();
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ statusCode: status, error: STATUS_CODES[status], reason });
      expect(typeof response.body.message).toBe('string');
      expect(await snapshotTables(db)).toEqual(before);
    });
  });
});
