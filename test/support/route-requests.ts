import { ROUTES, routeRequest } from '@nest-durable/common';
import fc from 'fast-check';
import type { TestDatabase } from './database';
import { type Fixtures, type Fuzzed, Ref, toJsonText, value } from './http-fuzz';
import { snapshotTables } from './snapshot';

/**
 * One well-formed request of every route of the API (typed by ROUTES: a route added without one here does not
 * compile), aimed at the runs, schedule and dead letter a suite keeps in known states (RouteTarget), with every
 * integer field the route takes. The request-bounds suite puts boundary integers in those fields; the fuzz suite
 * mutates them.
 */
export interface RouteRequest {
  params?: Record<string, Fuzzed>;
  query?: Record<string, Fuzzed>;
  body?: Fuzzed;
}

const queued = new Ref('queued run', (f) => f.queued);
const running = new Ref('running run', (f) => f.running.id);
/** The running run's revision: an integer field of the requests that carry it. */
export const REVISION = new Ref('running revision', (f) => f.running.revision);
const revision = REVISION;
const waiting = new Ref('waiting run', (f) => f.waiting.id);
const schedule = new Ref('schedule', (f) => f.schedule);
const deadLetter = new Ref('dead letter', (f) => f.deadLetter);
const offerId = '0b4f2d9e-6a51-4c1e-9d3f-2f7c8e1a5b60';
const worker = 'fuzz-worker';
const limited = { name: 'fuzz-limited', version: '1' };
const task = {
  expectedRevision: revision,
  key: 'ship#1',
  seq: 1,
  name: 'ship',
  status: 'completed',
  attempts: 1,
  durationMs: 5,
  attemptTimes: [{ offsetMs: 1, durationMs: 4 }],
  output: { shipped: true },
};

export const ROUTE_REQUESTS: Record<keyof typeof ROUTES, RouteRequest> = {
  startRun: { body: { workflow: 'fuzz-started', version: '1', input: { n: 1 }, priority: 10 } },
  startRuns: { body: { runs: [{ workflow: 'fuzz-started', version: '1', priority: -10 }] } },
  listRuns: { query: { workflow: 'fuzz-queued', limit: 10 } },
  getRun: { params: { id: queued } },
  runResult: { params: { id: queued }, query: { waitMs: 0 } },
  cancelRun: { params: { id: queued } },
  sendEvent: { params: { id: waiting, name: 'approved' }, body: { data: { ok: true } } },
  wakeRun: { params: { id: waiting } },
  retryRun: { params: { id: queued } },
  runTransitions: { params: { id: running }, query: { limit: 10, after: '1' } },
  queryRun: { params: { id: running, name: 'status' } },
  listRunValues: { params: { id: running } },
  rerunRun: { params: { id: queued }, body: { input: { n: 2 } } },
  // A workflow no run has: the bulk actions' bounds and refusals are checked without cancelling the suite's runs.
  cancelRuns: { body: { filter: { workflow: 'fuzz-unmatched' }, limit: 10 } },
  retryRuns: { body: { filter: { workflow: 'fuzz-unmatched' }, limit: 10 } },
  // The fixtures' workflows declare no update: refused (404) before any wait.
  sendUpdate: { params: { id: waiting, name: 'approve' }, body: { input: { ok: true }, waitMs: 0 } },
  getUpdate: { params: { id: waiting, name: 'approve', updateId: offerId }, query: { waitMs: 0 } },
  stats: { query: { window: '1h' } },
  feed: { query: { workflow: 'fuzz-queued' } },
  // Paused (and kept so by the fuzzer, see PINNED): a schedule that fired would write while a refusal is checked.
  createSchedule: { body: { workflow: 'fuzz-scheduled', version: '1', intervalMs: 3_600_000, priority: 1, paused: true } },
  listSchedules: { query: { limit: 10 } },
  getSchedule: { params: { id: schedule } },
  deleteSchedule: { params: { id: schedule } },
  pauseSchedule: { params: { id: schedule } },
  resumeSchedule: { params: { id: schedule } },
  triggerSchedule: { params: { id: schedule } },
  listDeadLetters: { query: { limit: 10 } },
  redriveDeadLetter: { params: { id: deadLetter } },
  deleteDeadLetter: { params: { id: deadLetter } },
  listWorkers: {},
  listWorkflows: {},
  pauseWorkflow: { params: limited, body: {} },
  resumeWorkflow: { params: limited, body: {} },
  setWorkflowLimits: { params: limited, body: { concurrency: 10, concurrencyPerKey: 2, ratePerSecond: 5, ratePerKeyPerSecond: 1 } },
  clearWorkflowLimits: { params: limited },
  registerWorker: {
    params: { workerId: worker },
    body: {
      subscriber: 'http',
      failedOver: false,
      concurrency: 4,
      runsHeld: 0,
      intervalMs: 1_000,
      workflows: [{ name: 'fuzz-registered', version: '1', shards: [], retentionMs: 60_000, limits: { concurrency: 3 } }],
    },
  },
  claimRuns: { body: { workerId: worker, workflows: [{ name: 'fuzz-claimed', version: '1' }], limit: 1, waitMs: 0 } },
  offerRuns: { body: { offerId, workerId: worker, workflows: [{ name: 'fuzz-offered', version: '1' }], waitMs: 0 } },
  withdrawOffer: { params: { offerId } },
  takeRuns: { body: { workerId: worker, workflows: [{ name: 'fuzz-taken', version: '1', wakeups: ['w1'] }] } },
  heartbeat: { body: { workerId: worker, runs: [{ id: running, expectedRevision: revision }] } },
  recordTask: { params: { id: running }, body: task },
  report: {
    body: {
      reports: [
        { type: 'task', runId: running, task },
        { type: 'values', runId: running, values: { expectedRevision: revision, exposed: { status: 'shipping' }, progress: { step: 'ship' } } },
        { type: 'fail', runId: running, fail: { expectedRevision: revision, error: { message: 'boom' }, retryDelayMs: 60_000 } },
      ],
    },
  },
  completeRun: { params: { id: running }, body: { expectedRevision: revision, output: 1 } },
  failRun: { params: { id: running }, body: { expectedRevision: revision, error: { message: 'boom' }, retryDelayMs: 60_000 } },
  suspendRun: {
    params: { id: running },
    body: { expectedRevision: revision, key: 'sleep:nap#1', seq: 2, kind: 'sleep', name: 'nap', delayMs: 60_000, attempts: 0 },
  },
  waitGroup: {
    params: { id: running },
    body: {
      expectedRevision: revision,
      key: 'group:deadline#1',
      seq: 4,
      name: 'deadline',
      mode: 'any',
      branches: [
        { kind: 'event', name: 'paid', match: { orderId: 'o-1' } },
        { kind: 'sleep', delayMs: 60_000 },
      ],
    },
  },
  startChild: {
    params: { id: running },
    body: { expectedRevision: revision, key: 'child:bill#1', seq: 3, name: 'bill', workflow: 'fuzz-child', version: '1', wait: true, timeoutMs: 60_000 },
  },
  releaseRun: { params: { id: running }, body: { expectedRevision: revision } },
  recordUpdates: {
    params: { id: running },
    body: { expectedRevision: revision, seq: 2, updates: [{ id: offerId, key: 'update:approve#1', status: 'completed', output: { ok: true } }] },
  },
  reportDeadLetter: { body: { workerId: worker, workflow: { name: 'fuzz-dead', version: '1' }, wakeup: 'w1', deliveries: 5 } },
  createCompletionToken: { params: { id: running }, body: { expectedRevision: revision, key: 'token:pay#1', seq: 4, name: 'pay', timeoutMs: 60_000 } },
  live: {},
  ready: {},
  metrics: {},
  dashboardConfig: {},
  // A well-formed token no run made: the route's answer is a 404 (a token is a secret: no fixture hands one out).
  completeExternal: { params: { token: `wfct_${'A'.repeat(43)}` }, body: { data: { paid: true } } },
};

export type RouteName = keyof typeof ROUTES;

/** A request of a route as the fuzzer or a boundary case sends it: its parts, unresolved (Refs to fixtures), and how. */
export interface RouteCase {
  route: RouteName;
  request: RouteRequest;
  contentType?: string;
}

/**
 * The suites' target: a coordinator and its database with runs in known states (a queued run, a running one with a
 * recorded task, one waiting for the event `approved`), a paused schedule and a dead letter. A request that lands
 * may move them on (complete, cancel, delete): refresh() makes new ones.
 */
export class RouteTarget {
  fixtures!: Fixtures;

  constructor(
    readonly db: TestDatabase,
    readonly url: string,
  ) {}

  async post(path: string, body: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(this.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`fixture ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  }

  private async claimOne(workflow: string): Promise<{ id: string; revision: number }> {
    await this.post('/v1/runs', { workflow, version: '1' });
    const claimed = await this.post('/v1/worker/claims', { workerId: 'fixtures', workflows: [{ name: workflow, version: '1' }], limit: 1 });
    return (claimed.runs as { id: string; revision: number }[])[0];
  }

  async createFixtures(): Promise<void> {
    const queued = (await this.post('/v1/runs', { workflow: 'fuzz-queued', version: '1' })).id as string;
    const running = await this.claimOne('fuzz-running');
    const charge = { expectedRevision: running.revision, key: 'charge#1', seq: 0, name: 'charge', status: 'completed', attempts: 1, output: { charged: 42 } };
    await this.post(`/v1/worker/runs/${running.id}/tasks`, charge);
    const waiting = await this.claimOne('fuzz-waiting');
    const approval = { expectedRevision: waiting.revision, key: 'event:approved#1', seq: 0, kind: 'event', name: 'approved', delayMs: null };
    await this.post(`/v1/worker/runs/${waiting.id}/suspend`, approval);
    const schedule = (await this.post('/v1/schedules', { workflow: 'fuzz-scheduled', version: '1', intervalMs: 3_600_000, paused: true })).id as string;
    const dead = { workerId: 'fixtures', workflow: { name: 'fuzz-dead', version: '1' }, wakeup: 'w0', deliveries: 5 };
    const deadLetter = (await this.post('/v1/worker/dead-letters', dead)).deadLetterId as string;
    this.fixtures = { queued, running, waiting: { id: waiting.id, revision: waiting.revision + 1 }, schedule, deadLetter };
  }

  /** After a request that landed: new fixtures if it moved any of them on. */
  async refresh(): Promise<void> {
    const f = this.fixtures;
    const [{ intact }] = await this.db.sql<{ intact: boolean }>(
      `SELECT (SELECT count(*) FROM runs WHERE (id, status, revision) IN (($1, 'queued', 0), ($2, 'running', $3), ($4, 'waiting', $5))) = 3
          AND EXISTS (SELECT FROM schedules WHERE id = $6 AND paused) AND EXISTS (SELECT FROM dead_letters WHERE id = $7) AS intact`,
      [f.queued, f.running.id, f.running.revision, f.waiting.id, f.waiting.revision, f.schedule, f.deadLetter],
    );
    if (!intact) await this.createFixtures();
  }

  /**
   * Sends the request with fetch (Node's undici: what the engine's client is built on), which sends the bytes as they
   * are. The feed answers a stream that stays open: its head is the answer, the stream is closed at once.
   */
  async send(sent: RouteCase, body?: string): Promise<{ status: number; type: string; text: string }> {
    const { method, path } = routeRequest(ROUTES[sent.route], { params: this.resolve(sent.request.params), query: this.resolve(sent.request.query) });
    const text = body ?? (sent.request.body === undefined ? undefined : toJsonText(sent.request.body, this.fixtures));
    const headers: Record<string, string> = text === undefined ? {} : { 'content-type': sent.contentType ?? 'application/json' };
    const response = await fetch(this.url + path, { method, headers, body: text });
    const type = response.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      await response.body?.cancel();
      return { status: response.status, type, text: '' };
    }
    return { status: response.status, type, text: await response.text() };
  }

  /**
   * Path parameters and query values as text: a fuzzed object or array as its JSON, a lone surrogate as U+FFFD (a URL
   * cannot carry one: the fuzz suite sends bytes that are not UTF-8 in paths of its own).
   */
  private resolve(parts: Record<string, Fuzzed> | undefined): Record<string, unknown> | undefined {
    if (!parts) return undefined;
    const text = (part: Fuzzed) =>
      part instanceof Ref
        ? part.resolve(this.fixtures)
        : part !== null && typeof part === 'object'
          ? toJsonText(part, this.fixtures).toWellFormed()
          : typeof part === 'string'
            ? part.toWellFormed()
            : part;
    return Object.fromEntries(Object.entries(parts).map(([key, part]) => [key, text(part)]));
  }

  /** A fingerprint of every table, but the feed's record of open feeds (refreshed by a timer while one is open). */
  async snapshot(): Promise<Record<string, string>> {
    const { feed_watchers: _, ...tables } = await snapshotTables(this.db);
    return tables;
  }
}

/** Fields the fuzzer keeps valid, or makes plainly invalid: a valid value there would long-poll, or fire a schedule. */
const PINNED = new Set(['waitMs', 'paused']);

/** What an integer field is mostly fuzzed with: the edges of PostgreSQL's integer (a revision no write can follow) and of a double. */
const edgeInteger = fc.constantFrom<Fuzzed>(2 ** 31 - 1, 2 ** 31, -1, 1e308, 0.5);

/** `base` with some of its fields (at any depth) replaced by fuzzed values, left out, or joined by an unknown one. */
function mutated(base: Fuzzed, depth = 0): fc.Arbitrary<Fuzzed> {
  if (Array.isArray(base)) return fc.tuple(...base.map((item) => mutated(item, depth + 1))).map((items) => items as Fuzzed[]);
  if (typeof base === 'number' || base === REVISION) {
    return fc.oneof({ weight: 3, arbitrary: fc.constant(base) }, { weight: 2, arbitrary: edgeInteger }, { weight: 1, arbitrary: value });
  }
  if (base === null || typeof base !== 'object' || base instanceof Ref)
    return fc.oneof({ weight: 4, arbitrary: fc.constant(base) }, { weight: 1, arbitrary: value });
  const fields = Object.entries(base).map(([key, item]) => {
    const kept = PINNED.has(key) ? fc.constantFrom<Fuzzed>(item, 'x', -1) : mutated(item, depth + 1);
    return fc.oneof({ weight: 6, arbitrary: kept }, { weight: 1, arbitrary: fc.constant(undefined) }).map((field) => [key, field] as const);
  });
  const extra = depth === 0 ? fc.option(fc.tuple(fc.string({ maxLength: 8 }), value), { freq: 8, nil: undefined }) : fc.constant(undefined);
  return fc.tuple(fc.tuple(...fields), extra).map(([entries, unknown]) => {
    const object: Record<string, Fuzzed> = Object.fromEntries(entries);
    if (unknown) object[unknown[0]] = unknown[1];
    return object;
  });
}

type Part = 'params' | 'query' | 'body';
type Leaf = { part: Part; path: (string | number)[] };

/** Every field of a request, at any depth (an object's fields, an array's items, and the leaves within). */
function leavesOf(request: RouteRequest): Leaf[] {
  const walk = (value: Fuzzed, path: (string | number)[]): (string | number)[][] => {
    const inner = Array.isArray(value)
      ? value.map((item, index) => [item, index] as const)
      : value !== null && typeof value === 'object' && !(value instanceof Ref)
        ? Object.entries(value).map(([key, item]) => [item, key] as const)
        : [];
    return [path, ...inner.flatMap(([item, step]) => walk(item as Fuzzed, [...path, step]))];
  };
  return (['params', 'query', 'body'] as const).flatMap((part) =>
    request[part] === undefined
      ? []
      : walk(request[part] as Fuzzed, [])
          .filter((path) => path.length > 0)
          .map((path) => ({ part, path })),
  );
}

/** `value` with what is at `path` replaced by `by` (a copy: `value` is left as it is). */
export function withLeaf(value: Fuzzed, [step, ...rest]: (string | number)[], by: Fuzzed): Fuzzed {
  if (step === undefined) return by;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as Record<string, Fuzzed>) }) as Record<string | number, Fuzzed>;
  copy[step] = withLeaf(copy[step], rest, by);
  return copy as Fuzzed;
}

function leafAt(value: Fuzzed, path: (string | number)[]): Fuzzed {
  return path.reduce<Fuzzed>((at, step) => (at as Record<string | number, Fuzzed>)[step], value);
}

/**
 * `request` with one field changed: an integer to one of the edges mostly, anything to a fuzzed value, or left out (a
 * PINNED field only to a plainly invalid value).
 */
function oneFieldChanged(request: RouteRequest): fc.Arbitrary<RouteRequest> {
  const leaves = leavesOf(request);
  if (leaves.length === 0) return fc.constant(request);
  return fc.constantFrom(...leaves).chain(({ part, path }) => {
    const current = leafAt(request[part] as Fuzzed, path);
    const isInteger = typeof current === 'number' || current === REVISION;
    const by = PINNED.has(String(path.at(-1)))
      ? fc.constantFrom<Fuzzed>('x', -1)
      : isInteger
        ? fc.oneof({ weight: 3, arbitrary: edgeInteger }, { weight: 1, arbitrary: value })
        : fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) });
    return by.map((replacement) => ({ ...request, [part]: withLeaf(request[part] as Fuzzed, path, replacement) }));
  });
}

/**
 * Requests of every route: its well-formed request with one field changed (what finds a bad value of one field: the
 * others stay valid, so it reaches the database), or with any of them mutated, left out or joined by unknown ones.
 */
export const everyRoute: fc.Arbitrary<RouteCase> = fc.constantFrom(...(Object.keys(ROUTE_REQUESTS) as RouteName[])).chain((route) => {
  const request = ROUTE_REQUESTS[route];
  const { params, query, body } = request;
  const manyFields = fc.record({
    params: params ? (mutated(params) as fc.Arbitrary<Record<string, Fuzzed>>) : fc.constant(undefined),
    query: query ? (mutated(query) as fc.Arbitrary<Record<string, Fuzzed>>) : fc.constant(undefined),
    body: body === undefined ? fc.constant(undefined) : mutated(body),
  });
  return fc.record({ route: fc.constant(route), request: fc.oneof({ weight: 2, arbitrary: oneFieldChanged(request) }, { weight: 1, arbitrary: manyFields }) });
});
