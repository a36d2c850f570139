import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';

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
  const countRuns = async () => Number((await db.sql<{ count: string }>('SELECT count(*) FROM runs'))[0].count);

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
    const bad = await http().post('/v1/runs/batch').send({ runs: [{ workflow: 'echo', version: '1' }, { workflow: 'bad:name', version: '1' }] }).expect(400);
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
    const waiting = http().get(`/v1/runs/${run.id}/result`).query({ waitMs: 30_000 });
    const parked = waiting.then((response) => response);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await http().post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: run.revision, output: { ok: 1 } }).expect(200);
    const result = await parked;
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ id: created.body.id, status: 'completed', output: { ok: 1 } });
  });

  it('result returns the run as it is once waitMs passes', async () => {
    const created = await start({ workflow: 'echo', version: '1' }).expect(201);
    const result = await http().get(`/v1/runs/${created.body.id}/result`).query({ waitMs: 200 }).expect(200);
    expect(result.body.status).toBe('queued');
  });

  describe('refuses bad input with a clear 400 and changes nothing', () => {
    const cases: [string, () => request.Test, string][] = [
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
      ['lone surrogate in input', () => start({ workflow: 'echo', version: '1', input: { a: 'x\ud800' } }), 'json_invalid_unicode'],
      ['bad shard', () => start({ workflow: 'echo', version: '1', shard: 'eu west' }), 'invalid_shard'],
      ['empty batch', () => http().post('/v1/runs/batch').send({ runs: [] }), 'invalid_runs'],
      ['array body', () => http().post('/v1/runs').send([1]), 'invalid_body'],
      [
        'malformed JSON',
        () => http().post('/v1/runs').set('content-type', 'application/json').send('{"workflow":'),
        'invalid_json',
      ],
      ['malformed run id', () => http().get('/v1/runs/123'), 'invalid_run_id'],
      ['SQL in run id', () => http().get("/v1/runs/1'%20OR%201=1--"), 'invalid_run_id'],
      ['negative waitMs', () => http().get('/v1/runs/01a22c37-316c-762f-a717-4521456009df/result?waitMs=-1'), 'invalid_waitMs'],
      ['bad list limit', () => http().get('/v1/runs?limit=0'), 'invalid_limit'],
      ['bad list status', () => http().get('/v1/runs?status=done'), 'invalid_status'],
      ['bad cursor', () => http().get('/v1/runs?cursor=abc'), 'invalid_cursor'],
      ['unknown query field', () => http().get('/v1/runs?sort=asc'), 'unknown_field'],
      ['claim without workflows', () => http().post('/v1/worker/claims').send({ workerId: 'w', workflows: [], limit: 1 }), 'invalid_workflows'],
      ['claim limit 0', () => http().post('/v1/worker/claims').send({ workerId: 'w', workflows: [{ name: 'e', version: '1' }], limit: 0 }), 'invalid_limit'],
      ['claim without workerId', () => http().post('/v1/worker/claims').send({ workflows: [{ name: 'e', version: '1' }], limit: 1 }), 'invalid_workerId'],
      ['control character in workerId', () => http().post('/v1/worker/claims').send({ workerId: 'w\u0007', workflows: [{ name: 'e', version: '1' }], limit: 1 }), 'invalid_workerId'],
      ['take with a zero count', () => http().post('/v1/worker/takes').send({ workerId: 'w', workflows: [{ name: 'echo', version: '1', count: 0 }] }), 'invalid_count'],
      ['heartbeat with a negative revision', () => http().post('/v1/worker/heartbeats').send({ workerId: 'w', runs: [{ id: '01a22c37-316c-762f-a717-4521456009df', expectedRevision: -1 }] }), 'invalid_expectedRevision'],
      ['task without seq', () => http().post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/tasks').send({ expectedRevision: 1, key: 'a#1', name: 'a', status: 'completed', attempts: 1 }), 'invalid_seq'],
      ['task output with NUL', () => http().post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/tasks').send({ expectedRevision: 1, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: '\u0000' }), 'json_nul_character'],
      ['suspend of an unknown kind', () => http().post('/v1/worker/runs/01a22c37-316c-762f-a717-4521456009df/suspend').send({ expectedRevision: 1, key: 'k', seq: 0, kind: 'nap', name: 'n', delayMs: 1 }), 'invalid_kind'],
      ['event with a bad name', () => http().post('/v1/runs/01a22c37-316c-762f-a717-4521456009df/events/a%20b').send({}), 'invalid_event_name'],
    ];

    it('refuses a body over the size limit with 413', async () => {
      const before = await countRuns();
      const response = await start({ workflow: 'echo', version: '1', input: 'x'.repeat(3 * 1024 * 1024) });
      expect(response.status).toBe(413);
      expect(response.body).toMatchObject({ statusCode: 413, reason: 'payload_too_large' });
      expect(await countRuns()).toBe(before);
    });

    it.each(cases)('%s', async (_name, send, reason) => {
      const before = await countRuns();
      const response = await send();
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', reason });
      expect(typeof response.body.message).toBe('string');
      expect(await countRuns()).toBe(before);
    });
  });
});
