import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { request as httpRequest } from 'node:http';
import { WaitingClaims } from '../apps/coordinator/src/hand-off/waiting-claims.service';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { RUN_TABLES } from '@app/persistence';

/**
 * The API description at /docs-json against what the coordinator serves: every route of the running app
 * (read from its Fastify router, not from a list) is described, with its request body where it reads one
 * and a schema for each response; and real responses of every described operation match their schemas.
 * The schemas are checked with Ajv, a validator of its own, so the document is tested as a reader gets it.
 */
type Operation = {
  requestBody?: { content?: Record<string, { schema?: object }> };
  responses?: Record<string, { content?: Record<string, { schema?: object }> }>;
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: object };

/** The routes that serve the description itself (and its browser UI): not part of the API it describes. */
const DESCRIPTION_ROUTES = /^\/docs(-json|-yaml|\/|\*|$)/;
const NO_SUCH_RUN = '01a22c37-316c-762f-a717-4521456009df';

/** Sends a request with a JSON body whatever the method (fetch sends none with GET); resolves with its status and reason. */
function sendWithBody(url: string, method: string, body: string): Promise<{ status: number; reason?: string }> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      url,
      { method: method.toUpperCase(), headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        // A stream (the live feed) stays open: its status is the answer.
        if ((response.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          response.destroy();
          resolve({ status: response.statusCode! });
          return;
        }
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const type = response.headers['content-type'] ?? '';
          resolve({ status: response.statusCode!, reason: type.startsWith('application/json') ? (JSON.parse(text) as { reason?: string }).reason : undefined });
        });
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

/** The dashboard's static files (GET at /ui and below, but for the API's /ui/config.json): no API operation. */
const DASHBOARD_FILES = /^\/ui(\/assets)?\/?\*?$/;

/**
 * Method and path (`{name}` for a parameter) of every route the app's Fastify router serves, from its printed
 * tree: each line is a node, indented four characters a level, whose path continues its parent's (a wildcard
 * prints as `*` without the slash before it). HEAD routes are the ones Fastify adds for each GET.
 */
function servedRoutes(fastify: FastifyInstance): { method: string; path: string }[] {
  const ancestors: string[] = [];
  return fastify
    .printRoutes({ commonPrefix: false })
    .split('\n')
    .flatMap((line) => {
      const node = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?$/u.exec(line);
      if (!node) return [];
      const depth = node[1].length / 4;
      ancestors.length = depth;
      const path = ancestors.join('') + node[2];
      ancestors.push(node[2]);
      return (node[3] ?? '')
        .split(', ')
        .filter((method) => method !== '' && method !== '-' && method !== 'HEAD')
        .map((method) => ({ method: method.toLowerCase(), path: path.replace(/:(\w+)/g, '{$1}') }));
    });
}

describe('HTTP contract', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let document: Document;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  /** Operations whose success responses the requests below checked (`post /v1/runs`). */
  const exercised = new Set<string>();

  beforeAll(async () => {
    db = await createTestDatabase('contract');
    coordinator = await startCoordinator(db.url);
    document = (await (await fetch(`${coordinator.url}/docs-json`)).json()) as Document;
    // References inside the document (#/components/...) resolve against it.
    ajv.addSchema(document, 'openapi');
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
  const served = () =>
    servedRoutes(coordinator.app.getHttpAdapter().getInstance()).filter((route) => !DESCRIPTION_ROUTES.test(route.path) && !DASHBOARD_FILES.test(route.path));

  /**
   * Sends a request to the operation `method template`, checks the answer against the schema the document gives
   * for its status and content type, and returns it.
   */
  async function call(method: string, template: string, options: { params?: Record<string, string>; query?: string; body?: unknown } = {}) {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params![name]));
    const response = await fetch(`${coordinator.url}${path}${options.query ?? ''}`, {
      method: method.toUpperCase(),
      headers: options.body === undefined ? {} : { 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    const type = (response.headers.get('content-type') ?? '').split(';')[0];
    const where = `${method.toUpperCase()} ${template} answered ${response.status} ${text.slice(0, 300)}`;
    const described = document.paths[template]?.[method]?.responses?.[String(response.status)];
    if (!described) throw new Error(`${where}: the document describes no such response`);
    let body: unknown;
    if (response.status !== 204) {
      if (!described.content?.[type]) throw new Error(`${where}: the document gives no ${type} content for it`);
      body = type === 'application/json' ? JSON.parse(text) : text;
      const schemaPointer = pointer('paths', template, method, 'responses', String(response.status), 'content', type, 'schema');
      const validate = ajv.getSchema(`openapi#/${schemaPointer}`);
      if (!validate) throw new Error(`${where}: no schema at ${schemaPointer}`);
      if (!validate(body)) throw new Error(`${where}: does not match its schema: ${ajv.errorsText(validate.errors)}`);
    }
    if (response.status < 300) exercised.add(`${method} ${template}`);
    // biome-ignore lint/suspicious/noExplicitAny: checked against its documented schema just above; the tests read its fields
    return { status: response.status, body: body as any };
  }

  it('describes the API in OpenAPI 3.1', () => {
    expect(document.openapi).toBe('3.1.0');
  });

  it('describes every route the app serves, and no other', () => {
    const routes = served().map(({ method, path }) => `${method} ${path}`);
    expect(routes.length).toBeGreaterThan(20);
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));
    expect(operations.sort()).toEqual([...new Set(routes)].sort());
  });

  it('gives each operation a schema for each response, and for each error the error body', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const responses = Object.entries(operation.responses ?? {});
        expect([`${method} ${path}`, responses.some(([status]) => /^2/.test(status))]).toEqual([`${method} ${path}`, true]);
        for (const [status, response] of responses) {
          const contents = status === '204' ? [] : Object.values(response.content ?? {});
          const where = `${method} ${path} ${status}`;
          expect([where, status === '204' || contents.length > 0]).toEqual([where, true]);
          for (const content of contents) expect([where, content.schema !== undefined]).toEqual([where, true]);
          if (/^[45]/.test(status) && !path.startsWith('/health')) {
            // An update's 422 carries the update beside the error body's fields.
            const body = where === 'post /v1/runs/{id}/updates/{name} 422' ? 'UpdateFailedBody' : 'ErrorBody';
            expect([where, response.content?.['application/json']?.schema]).toEqual([where, { $ref: `#/components/schemas/${body}` }]);
          }
        }
      }
    }
  });

  it('describes a request body exactly where a route reads one', async () => {
    // A closed body refuses an unknown field (400 unknown_field) before anything reads the database; a route
    // that reads no body ignores it. Ids that exist nowhere keep the other routes from changing anything.
    for (const { method, path } of served()) {
      const url =
        coordinator.url +
        path
          .replace('{id}', path.startsWith('/v1/dead-letters') ? '9' : NO_SUCH_RUN)
          .replace('{name}', 'approved')
          .replace('{version}', '1')
          .replace('{token}', `wfct_${'A'.repeat(43)}`);
      const response = await sendWithBody(url, method, '{"contractProbe":1}');
      const readsBody = response.status === 400 && response.reason === 'unknown_field';
      const described = document.paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema !== undefined;
      expect([`${method} ${path}`, described]).toEqual([`${method} ${path}`, readsBody]);
    }
  });

  describe('real responses match the documented schemas', () => {
    const ECHO = { name: 'echo', version: '1' };
    const start = async (input: unknown = { n: 1 }) => (await call('post', '/v1/runs', { body: { workflow: 'echo', version: '1', input } })).body;
    const claimOne = async () => {
      const { body } = await call('post', '/v1/worker/claims', { body: { workerId: 'contract', workflows: [ECHO], limit: 1 } });
      expect(body.runs).toHaveLength(1);
      return body.runs[0] as { id: string; revision: number };
    };

    it('runs: start, batch, list, get, result, cancel, events, wake, retry', async () => {
      const run = await start();
      expect((await call('post', '/v1/runs', { body: { workflow: 'echo', version: '1', idempotencyKey: 'k-1' } })).status).toBe(201);
      expect((await call('post', '/v1/runs', { body: { workflow: 'echo', version: '1', idempotencyKey: 'k-1' } })).status).toBe(200);
      expect(
        (
          await call('post', '/v1/runs/batch', {
            body: { runs: [{ workflow: 'echo', version: '1', priority: 5, shard: 'eu', runAt: '2030-01-01T00:00:00Z' }] },
          })
        ).status,
      ).toBe(201);
      expect((await call('get', '/v1/runs', { query: '?limit=2' })).body.nextCursor).toEqual(expect.any(String));
      await call('get', '/v1/runs/{id}', { params: { id: run.id } });
      await call('get', '/v1/runs/{id}/result', { params: { id: run.id }, query: '?waitMs=0' });
      expect((await call('post', '/v1/runs/{id}/cancel', { params: { id: run.id } })).body.status).toBe('cancelled');
      expect((await call('post', '/v1/runs/{id}/cancel', { params: { id: run.id } })).status).toBe(409);
      expect((await call('get', '/v1/runs/{id}', { params: { id: NO_SUCH_RUN } })).status).toBe(404);
      expect((await call('get', '/v1/runs', { query: '?limit=0' })).body.reason).toBe('invalid_limit');

      await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
      const sleeper = await start();
      const held = await claimOne();
      const sleep = { expectedRevision: held.revision, key: 'sleep:nap#1', seq: 0, kind: 'sleep', name: 'nap', delayMs: 3_600_000 };
      expect((await call('post', '/v1/worker/runs/{id}/suspend', { params: { id: sleeper.id }, body: sleep })).body.suspended).toBe(true);
      const woken = (await call('post', '/v1/runs/{id}/wake', { params: { id: sleeper.id } })).body;
      expect(Date.parse(woken.runAt)).toBeLessThanOrEqual(Date.now());
      expect((await call('post', '/v1/runs/{id}/events/{name}', { params: { id: sleeper.id, name: 'approved' }, body: { data: { ok: true } } })).status).toBe(
        202,
      );

      const again = await claimOne();
      await call('post', '/v1/worker/runs/{id}/fail', {
        params: { id: sleeper.id },
        body: { expectedRevision: again.revision, error: { name: 'Error', message: 'boom' } },
      });
      expect((await call('post', '/v1/runs/{id}/retry', { params: { id: sleeper.id } })).body).toMatchObject({ status: 'queued', attempt: 2 });
      expect((await call('post', '/v1/runs/{id}/rerun', { params: { id: sleeper.id } })).status).toBe(409);
      expect((await call('post', '/v1/runs/retry', { body: { filter: { workflow: 'echo' }, dryRun: true } })).body).toMatchObject({ matched: 0 });
      expect((await call('post', '/v1/runs/cancel', { body: { filter: { workflow: 'echo' } } })).body).toMatchObject({ matched: 1, acted: 1 });
      expect((await call('post', '/v1/runs/{id}/rerun', { params: { id: sleeper.id }, body: { input: { n: 1 } } })).status).toBe(201);
    });

    it('completion tokens: a worker records one, an outside caller completes it once', async () => {
      await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
      const run = await start();
      const held = await claimOne();
      const body = { expectedRevision: held.revision, key: 'token:pay#1', seq: 0, name: 'pay', timeoutMs: 3_600_000 };
      const { token } = (await call('post', '/v1/worker/runs/{id}/completion-tokens', { params: { id: run.id }, body })).body.output;
      // Sent again (its answer lost), the recorded step: the same token. A stale revision changes nothing.
      expect((await call('post', '/v1/worker/runs/{id}/completion-tokens', { params: { id: run.id }, body })).body.output).toEqual({ token });
      const stale = { ...body, expectedRevision: held.revision - 1, key: 'token:pay#2', seq: 1 };
      expect((await call('post', '/v1/worker/runs/{id}/completion-tokens', { params: { id: run.id }, body: stale })).body.reason).toBe('revision_conflict');
      expect((await call('post', '/v1/completions/{token}', { params: { token }, body: { data: { paid: true } } })).body).toEqual({ delivered: false });
      expect((await call('post', '/v1/completions/{token}', { params: { token }, body: {} })).status).toBe(409);
      expect((await call('post', '/v1/completions/{token}', { params: { token: `wfct_${'B'.repeat(43)}` } })).status).toBe(404);
    });

    it('updates: sent (202 past waitMs, 422 when the handler threw), handed to the run at its wait, recorded, read', async () => {
      await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
      await db.sql(`INSERT INTO workflows (workflow, version, updates) VALUES ('echo', '1', '[{"name": "add", "inputSchema": {"type": "object"}}]')
                    ON CONFLICT (workflow, version) DO UPDATE SET updates = excluded.updates`);
      const run = await start();
      const held = await claimOne();
      const send = (waitMs: number) => call('post', '/v1/runs/{id}/updates/{name}', { params: { id: run.id, name: 'add' }, body: { input: {}, waitMs } });
      const pending = await send(0);
      expect(pending).toMatchObject({ status: 202, body: { status: 'pending' } });
      const sleep = { expectedRevision: held.revision, key: 'sleep:nap#1', seq: 0, kind: 'sleep', name: 'nap', delayMs: 3_600_000 };
      const suspend = () => call('post', '/v1/worker/runs/{id}/suspend', { params: { id: run.id }, body: sleep });
      expect((await suspend()).body).toMatchObject({ suspended: false, updates: [{ id: pending.body.id, name: 'add', input: {} }] });
      const record = (id: string, answer: object) =>
        call('post', '/v1/worker/runs/{id}/updates', {
          params: { id: run.id },
          body: { expectedRevision: held.revision, seq: 0, updates: [{ id, key: `update:add#${id}`, ...answer }] },
        });
      expect((await record(pending.body.id, { status: 'completed', output: 1 })).status).toBe(204);
      const read = await call('get', '/v1/runs/{id}/updates/{name}/{updateId}', {
        params: { id: run.id, name: 'add', updateId: pending.body.id },
        query: '?waitMs=0',
      });
      expect(read.body).toMatchObject({ status: 'completed', output: 1 });

      const failing = send(10_000);
      const [{ id }] = await eventually('the second update', async () => {
        const rows = await db.sql<{ id: string }>(`SELECT id FROM run_updates WHERE status = 'pending'`);
        return rows.length > 0 && rows;
      });
      await record(id, { status: 'failed', error: { name: 'Error', message: 'no' } });
      expect(await failing).toMatchObject({ status: 422, body: { reason: 'update_failed', update: { status: 'failed', error: { message: 'no' } } } });
      expect((await suspend()).body.suspended).toBe(true);
      expect((await call('post', '/v1/runs/{id}/updates/{name}', { params: { id: run.id, name: 'remove' }, body: {} })).body.reason).toBe(
        'update_not_declared',
      );
    });

    it('worker protocol: claims, takes, heartbeats, task results, reports, outcomes, suspensions, children, groups, releases', async () => {
      await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
      const [first, second, third] = [await start(), await start(), await start()];
      const held = await claimOne();
      expect(held.id).toBe(first.id);
      expect(
        (
          await call('post', '/v1/worker/heartbeats', {
            body: {
              workerId: 'contract',
              runs: [
                { id: held.id, expectedRevision: held.revision },
                { id: NO_SUCH_RUN, expectedRevision: 1 },
              ],
            },
          })
        ).body.lost,
      ).toEqual([NO_SUCH_RUN]);
      const task = {
        expectedRevision: held.revision,
        key: 'charge#1',
        seq: 0,
        name: 'charge',
        status: 'completed',
        attempts: 1,
        output: { charged: 42 },
        error: null,
      };
      await call('post', '/v1/worker/runs/{id}/tasks', { params: { id: held.id }, body: task });
      expect(
        (await call('post', '/v1/worker/runs/{id}/tasks', { params: { id: held.id }, body: { ...task, expectedRevision: held.revision + 5 } })).status,
      ).toBe(409);
      const child = {
        expectedRevision: held.revision,
        key: 'child:bill#1',
        seq: 1,
        name: 'bill',
        workflow: 'echo',
        version: '1',
        input: 1,
        wait: false,
        timeoutMs: null,
      };
      await call('post', '/v1/worker/runs/{id}/children', { params: { id: held.id }, body: child });
      const group = {
        expectedRevision: held.revision,
        key: 'group:race#1',
        seq: 3,
        name: 'race',
        mode: 'any',
        branches: [
          { kind: 'event', name: 'go' },
          { kind: 'sleep', delayMs: 0 },
        ],
      };
      expect((await call('post', '/v1/worker/runs/{id}/groups', { params: { id: held.id }, body: group })).body).toMatchObject({
        suspended: false,
        task: { kind: 'group', output: { mode: 'any', index: 1 } },
      });
      const reports = [
        { type: 'task', runId: held.id, task: { ...task, key: 'ship#1', seq: 2, name: 'ship' } },
        { type: 'values', runId: held.id, values: { expectedRevision: held.revision, exposed: { stage: 'shipped' }, progress: { done: 2 } } },
        { type: 'complete', runId: held.id, complete: { expectedRevision: held.revision, output: 'done' } },
        { type: 'fail', runId: NO_SUCH_RUN, fail: { expectedRevision: 1, error: { message: 'boom' } } },
      ];
      const { body } = await call('post', '/v1/worker/reports', { body: { reports } });
      expect(body.outcomes.map((outcome: { ok: boolean }) => outcome.ok)).toEqual([true, true, true, false]);
      const query = (name: string) => call('get', '/v1/runs/{id}/queries/{name}', { params: { id: held.id, name } });
      expect((await query('stage')).body).toMatchObject({ source: 'value', value: 'shipped' });
      expect((await query('nothing')).body.reason).toBe('query_not_found');
      expect((await call('get', '/v1/runs/{id}/queries', { params: { id: held.id } })).body).toEqual({
        runId: held.id,
        values: [{ name: 'stage', value: 'shipped', updatedAt: expect.any(String) }],
      });
      expect((await call('get', '/v1/runs/{id}/queries', { params: { id: second.id } })).body).toEqual({ runId: second.id, values: [] });

      const taken = await call('post', '/v1/worker/takes', { body: { workerId: 'contract', workflows: [{ ...ECHO, wakeups: ['0/1-0', '0/2-0'] }] } });
      expect(taken.body.runs.map((run: { id: string }) => run.id).sort()).toEqual([second.id, third.id].sort());
      const [released] = taken.body.runs as { id: string; revision: number }[];
      await call('post', '/v1/worker/runs/{id}/release', { params: { id: released.id }, body: { expectedRevision: released.revision } });
      // A withdrawn offer answers at once, with nothing when no run was started meanwhile.
      const offerId = '00000000-0000-4000-8000-00000000000f';
      const offer = call('post', '/v1/worker/offers', { body: { offerId, workerId: 'contract', workflows: [ECHO], waitMs: 10_000 } });
      // Withdrawn once it waits: a withdrawal that comes first (404 offer_not_found) is remembered, and the offer then
      // answers at once without waiting, so polling the withdrawal could race its own offer forever.
      await eventually('the offer to wait', async () => coordinator.app.get(WaitingClaims).waiting('echo:1') > 0);
      expect((await call('delete', '/v1/worker/offers/{offerId}', { params: { offerId } })).status).toBe(204);
      expect((await offer).body.runs).toEqual([]);
      const last = await claimOne();
      await call('post', '/v1/worker/runs/{id}/complete', { params: { id: last.id }, body: { expectedRevision: last.revision, output: null } });
      expect((await call('post', '/v1/worker/runs/{id}/complete', { params: { id: 'not-a-uuid' }, body: { expectedRevision: 1 } })).body.reason).toBe(
        'invalid_run_id',
      );
    });

    it('dead letters: a worker hands one over; list, redrive, delete', async () => {
      const run = await start();
      const report = (wakeup: string) => ({ workerId: 'contract', workflow: { name: 'echo', version: '1' }, wakeup, runId: run.id, deliveries: 6 });
      const recorded = (await call('post', '/v1/worker/dead-letters', { body: report('0/5-0') })).body;
      await call('post', '/v1/worker/dead-letters', { body: report('0/6-0') });
      const page = (await call('get', '/v1/dead-letters', { query: '?limit=1' })).body;
      expect(page.nextCursor).toEqual(expect.any(String));
      await call('post', '/v1/dead-letters/{id}/redrive', { params: { id: recorded.deadLetterId } });
      const [left] = (await call('get', '/v1/dead-letters')).body.deadLetters;
      expect((await call('delete', '/v1/dead-letters/{id}', { params: { id: left.id } })).status).toBe(204);
      expect((await call('delete', '/v1/dead-letters/{id}', { params: { id: left.id } })).status).toBe(404);
    });

    it("operators' views: stats, a run's transitions, the live feed", async () => {
      await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
      const run = await start();
      expect((await call('get', '/v1/stats', { query: '?window=24h' })).body.runs).toEqual([{ workflow: 'echo', version: '1', status: 'queued', count: 1 }]);
      expect((await call('get', '/v1/stats', { query: '?window=1w' })).body.reason).toBe('invalid_window');
      expect((await call('get', '/v1/runs/{id}/transitions', { params: { id: run.id } })).body.items).toHaveLength(1);
      expect((await call('get', '/v1/runs/{id}/transitions', { params: { id: NO_SUCH_RUN } })).status).toBe(404);

      // A stream: its documented content type and status, and the events it sends, read until the first one.
      const controller = new AbortController();
      const response = await fetch(`${coordinator.url}/v1/feed?runId=${run.id}`, { signal: controller.signal });
      const type = (response.headers.get('content-type') ?? '').split(';')[0];
      expect(Object.keys(document.paths['/v1/feed'].get.responses?.[String(response.status)]?.content ?? {})).toEqual([type]);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes(': connected\n\n')) text += (await reader.read()).value;
      await call('post', '/v1/runs/{id}/cancel', { params: { id: run.id } });
      while (!text.includes('event: run\n')) text += (await reader.read()).value;
      controller.abort();
      expect(text).toContain(`"id":"${run.id}"`);
      exercised.add('get /v1/feed');
      expect((await call('get', '/v1/feed', { query: '?workflow=no:such' })).body.reason).toBe('invalid_workflow');
    });

    it('workers: a worker registers; clients list the registry', async () => {
      const registration = { subscriber: 'http', failedOver: false, concurrency: 4, runsHeld: 1, intervalMs: 5_000, workflows: [{ ...ECHO, shards: ['eu'] }] };
      expect((await call('put', '/v1/worker/workers/{workerId}', { params: { workerId: 'contract' }, body: registration })).status).toBe(204);
      expect((await call('put', '/v1/worker/workers/{workerId}', { params: { workerId: 'contract' }, body: { ...registration, runsHeld: -1 } })).status).toBe(
        400,
      );
      expect((await call('get', '/v1/workers')).body.items).toEqual([expect.objectContaining({ id: 'contract', online: true, runsHeld: 1 })]);
    });

    it('workflows: pause, resume, limits; clients list the versions', async () => {
      const params = { name: 'contract-flow', version: '1' };
      expect((await call('post', '/v1/workflows/{name}/{version}/pause', { params, body: { shard: 'eu' } })).body).toMatchObject({ pausedShards: ['eu'] });
      expect((await call('post', '/v1/workflows/{name}/{version}/resume', { params })).body).toMatchObject({ paused: false, pausedShards: [] });
      expect((await call('put', '/v1/workflows/{name}/{version}/limits', { params, body: { concurrency: 2, ratePerSecond: 0.5 } })).body).toMatchObject({
        limits: { concurrency: 2, ratePerSecond: 0.5 },
      });
      expect((await call('put', '/v1/workflows/{name}/{version}/limits', { params, body: { concurrency: -2 } })).status).toBe(400);
      expect((await call('delete', '/v1/workflows/{name}/{version}/limits', { params })).body).toMatchObject({ limits: { concurrency: null } });
      expect((await call('get', '/v1/workflows')).body.items).toEqual(expect.arrayContaining([expect.objectContaining(params)]));
    });

    it('schedules: create, list, get, pause, resume, trigger, delete', async () => {
      const created = (
        await call('post', '/v1/schedules', {
          body: { workflow: 'echo', version: '1', cron: '0 0 3 * * *', timezone: 'Europe/Berlin', input: { report: 'nightly' } },
        })
      ).body;
      expect((await call('post', '/v1/schedules', { body: { workflow: 'echo', version: '1', cron: 'at noon' } })).body.reason).toBe('invalid_cron');
      expect((await call('get', '/v1/schedules', { query: '?limit=1' })).body.schedules).toEqual([expect.objectContaining({ id: created.id })]);
      await call('get', '/v1/schedules/{id}', { params: { id: created.id } });
      expect((await call('post', '/v1/schedules/{id}/pause', { params: { id: created.id } })).body).toMatchObject({ paused: true, nextRunAt: null });
      expect((await call('post', '/v1/schedules/{id}/resume', { params: { id: created.id } })).body.paused).toBe(false);
      expect((await call('post', '/v1/schedules/{id}/trigger', { params: { id: created.id } })).body.run.input).toEqual({ report: 'nightly' });
      expect((await call('delete', '/v1/schedules/{id}', { params: { id: created.id } })).status).toBe(204);
      expect((await call('get', '/v1/schedules/{id}', { params: { id: created.id } })).status).toBe(404);
    });

    it('operations: health, metrics and the dashboard settings', async () => {
      await call('get', '/health/live');
      await call('get', '/health/ready');
      await call('get', '/metrics');
      expect((await call('get', '/ui/config.json')).body).toEqual({ authRequired: false, traceUrlTemplate: null });
    });

    it('exercised every described operation', () => {
      const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));
      expect(operations.filter((operation) => !exercised.has(operation))).toEqual([]);
    });
  });
});
