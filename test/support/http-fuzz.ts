import fc from 'fast-check';

/**
 * What the HTTP fuzz test (test/http-fuzz.e2e-spec.ts) sends: requests that are mostly valid with
 * hostile values mixed in (lone surrogates, NUL, deep nesting, wrong types, unknown fields, foreign
 * content types, broken or cut JSON), aimed at runs the test keeps in known states.
 */

/** The runs the fuzzed requests aim at, so that they get past the validation into the SQL. */
export interface Fixtures {
  queued: string;
  running: { id: string; revision: number };
  waiting: { id: string; revision: number };
  /** A paused schedule. */
  schedule: string;
  deadLetter: string;
}

/** A part of a request resolved against the fixtures when it is sent (they change as requests land). */
export class Ref {
  constructor(
    readonly label: string,
    readonly resolve: (fixtures: Fixtures) => unknown,
  ) {}

  [fc.toStringMethod](): string {
    return `<${this.label}>`;
  }
}

/** JSON text this many levels deep, built as text: a value that deep is what the server must not recurse into. */
class Deep {
  constructor(readonly depth: number) {}

  [fc.toStringMethod](): string {
    return `<${this.depth} levels>`;
  }
}

export type Fuzzed = undefined | null | boolean | number | string | Ref | Deep | Fuzzed[] | { [key: string]: Fuzzed };

export function toJsonText(value: Fuzzed, fixtures: Fixtures): string {
  if (value instanceof Ref) return JSON.stringify(value.resolve(fixtures));
  if (value instanceof Deep) return '['.repeat(value.depth) + ']'.repeat(value.depth);
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : toJsonText(item, fixtures))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, item]) => item !== undefined);
    return `{${fields.map(([key, item]) => `${JSON.stringify(key)}:${toJsonText(item, fixtures)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const hostileCharacter = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\u0000', '\u001f', '\u007f', '\ufffd', ':', '#', '/', '%', ' ') },
);
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: hostileCharacter, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(129), 'x'.repeat(256), '__proto__', 'constructor') },
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  // The edges of PostgreSQL's integer (2 ** 31 - 1 is a revision no write can follow), of a double's exact integers, of the delays.
  fc.constantFrom(
    0,
    -1,
    1,
    1000,
    1001,
    -1001,
    2 ** 31 - 2,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53,
    2 ** 63,
    1e308,
    0.5,
    100 * 365 * 24 * 3600 * 1000 + 1,
  ),
);
const scalar = fc.oneof(text, number, fc.boolean(), fc.constant(null));
const deep = fc.oneof(fc.integer({ min: 1, max: 6_000 }), fc.integer({ min: 120, max: 135 })).map((depth) => new Deep(depth));
export const { value } = fc.letrec<{ value: Fuzzed }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    { weight: 4, arbitrary: scalar },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(text, tie('value'), { maxKeys: 3 }) },
  ),
}));

/** Mostly one of the valid values; sometimes anything, or missing. */
function field(...valid: Fuzzed[]): fc.Arbitrary<Fuzzed> {
  return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) });
}

/** `arbitrary`'s value once in `oneIn` times, else undefined (a field left out). */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

/** An object of these fields, now and then with an unknown one. */
function body(shape: Record<string, fc.Arbitrary<Fuzzed>>): fc.Arbitrary<Fuzzed> {
  return fc.tuple(fc.record(shape), sometimes(fc.tuple(text, value), 8)).map(([fields, extra]) => (extra ? { ...fields, [extra[0]]: extra[1] } : fields));
}

const heldRun = new Ref('running run', (f) => f.running.id);
const runId = fc.constantFrom(
  new Ref('queued run', (f) => f.queued),
  heldRun,
  new Ref('waiting run', (f) => f.waiting.id),
  '01a22c37-316c-762f-a717-4521456009df', // no such run
  '123',
);
/** The running run's revision, or one next to it (stale, or one it never had). */
const heldRevision = fc.constantFrom(
  new Ref('running revision', (f) => f.running.revision),
  new Ref('stale revision', (f) => f.running.revision - 1),
  new Ref('next revision', (f) => f.running.revision + 1),
);
const fuzzedRevision = fc.oneof(
  { weight: 4, arbitrary: heldRevision },
  // The last revisions an integer holds: no write can follow 2^31 - 1.
  { weight: 1, arbitrary: fc.constantFrom(2 ** 31 - 2, 2 ** 31 - 1, 2 ** 31) },
  { weight: 1, arbitrary: value },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

/** A path segment: usually well-formed text, percent-encoded; sometimes an encoding that is not UTF-8. */
const segment = fc.oneof(
  { weight: 3, arbitrary: fc.constant('approved') },
  { weight: 3, arbitrary: text.filter((s) => s.isWellFormed()).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.constantFrom('%ED%A0%80', '%', '%zz', '%00', '..', '%2F', '%3A') },
);
const runSegment = fc.oneof({ weight: 6, arbitrary: runId }, { weight: 1, arbitrary: segment });

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      'application/vnd.api+json',
      'application/octet-stream',
      null,
    ),
  },
);

/** A body as sent: JSON text of a fuzzed value, mostly; sometimes text that is not JSON or is cut short. */
type Payload = { json: Fuzzed } | { raw: string } | { cut: Fuzzed; at: number };
function payload(of: fc.Arbitrary<Fuzzed>): fc.Arbitrary<Payload> {
  return fc.oneof(
    { weight: 10, arbitrary: of.map((json) => ({ json })) },
    { weight: 1, arbitrary: text.map((raw) => ({ raw })) },
    { weight: 1, arbitrary: fc.tuple(of, fc.nat()).map(([cut, at]) => ({ cut, at })) },
  );
}

export interface FuzzRequest {
  method: 'GET' | 'POST';
  path: (string | Ref)[];
  contentType?: string | null;
  payload?: Payload;
}

function post(path: fc.Arbitrary<(string | Ref)[]>, of: fc.Arbitrary<Fuzzed>, optionalBody = false): fc.Arbitrary<FuzzRequest> {
  return fc.record({
    method: fc.constant<'POST'>('POST'),
    path,
    contentType,
    payload: optionalBody ? fc.option(payload(of), { nil: undefined, freq: 3 }) : payload(of),
  });
}

const path = (...parts: (string | fc.Arbitrary<string | Ref>)[]) => fc.tuple(...parts.map((part) => (typeof part === 'string' ? fc.constant(part) : part)));
const runPath = (suffix: string) => path('/v1/worker/runs/', runSegment, suffix);

const startRun = body({
  workflow: field('echo', 'fuzz-started', 'a.b-c_1'),
  version: field('1', '2.0.0'),
  input: fc.option(value, { nil: undefined }),
  idempotencyKey: fc.option(field('k-1', 'k-\ufffd', 'order 42'), { nil: undefined, freq: 2 }),
  shard: sometimes(field('eu-west'), 4),
  priority: sometimes(field(0, 1000, -1000), 4),
  runAt: sometimes(field('2030-01-01T00:00:00Z', new Date(0).toISOString()), 4),
});
export const runStarts = fc.oneof(
  { weight: 3, arbitrary: post(path('/v1/runs'), startRun) },
  { weight: 1, arbitrary: post(path('/v1/runs/batch'), body({ runs: fc.oneof(fc.array(startRun, { maxLength: 3 }), value) })) },
);

export const events = post(path('/v1/runs/', runSegment, '/events/', segment), body({ data: fc.option(value, { nil: undefined }) }), true);

const taskResult = body({
  expectedRevision: fuzzedRevision,
  key: field('charge#1', 'ship#1', 'retry:ship#1'),
  seq: field(0, 1),
  name: field('charge', 'ship'),
  status: field('completed', 'failed'),
  attempts: field(1, 2),
  output: fc.option(value, { nil: undefined }),
  error: fc.option(field({ message: 'boom' }, { name: 'E', message: 'm', stack: 's' }), { nil: undefined }),
});
const complete = body({ expectedRevision: fuzzedRevision, output: fc.option(value, { nil: undefined }) });
const failure = body({
  expectedRevision: fuzzedRevision,
  error: field({ message: 'boom' }, { name: 'E', message: 'm', stack: 's' }),
  retryDelayMs: sometimes(field(0, 60_000), 4),
});
const report = fc.oneof(
  body({ type: field('task'), runId, task: taskResult }),
  body({ type: field('complete'), runId, complete }),
  body({ type: field('fail'), runId, fail: failure }),
);
export const workerReports = post(
  path('/v1/worker/reports'),
  body({ reports: fc.oneof({ weight: 5, arbitrary: fc.array(report, { maxLength: 4 }) }, { weight: 1, arbitrary: value }) }),
);

const workflows = fc.oneof(fc.constant<Fuzzed>([{ name: 'echo', version: '1' }]), value);
export const workerWrites = fc.oneof(
  post(runPath('/tasks'), taskResult),
  post(runPath('/complete'), complete),
  post(runPath('/fail'), failure),
  post(runPath('/release'), body({ expectedRevision: fuzzedRevision })),
  post(
    runPath('/suspend'),
    body({
      expectedRevision: fuzzedRevision,
      key: field('charge#1', 'sleep:nap#1', 'retry:ship#1', 'event:approved#1'),
      seq: field(0, 1, 2),
      kind: field('sleep', 'event', 'retry'),
      name: field('nap', 'approved', 'ship', 'charge'),
      delayMs: field(0, 60_000, null),
      attempts: fc.option(field(1, 3), { nil: undefined }),
    }),
  ),
  post(
    runPath('/children'),
    body({
      expectedRevision: fuzzedRevision,
      key: field('child:bill#1', 'charge#1'),
      seq: field(1),
      name: field('bill'),
      workflow: field('echo'),
      version: field('1'),
      input: fc.option(value, { nil: undefined }),
      wait: field(true, false),
      timeoutMs: fc.option(field(0, 1_000, null), { nil: undefined }),
    }),
  ),
  // Claims never long-poll here: the only valid waitMs is 0 (or none).
  post(
    path('/v1/worker/claims'),
    body({ workerId: field('fuzz-worker', 'w\ud800'), workflows, limit: field(1, 0, 501), waitMs: fc.constantFrom(undefined, 0, -1, 60_001, '0', 'x', null) }),
  ),
  post(
    path('/v1/worker/heartbeats'),
    body({ workerId: field('fuzz-worker'), runs: fc.oneof(fc.array(body({ id: runId, expectedRevision: fuzzedRevision }), { maxLength: 3 }), value) }),
  ),
  post(
    path('/v1/worker/takes'),
    body({
      workerId: field('fuzz-worker', 'w\ud800'),
      workflows: fc.oneof(
        fc.array(body({ name: field('echo'), version: field('1'), wakeups: fc.oneof(fc.array(field('w1', 'w2', ''), { maxLength: 3 }), value) }), {
          maxLength: 2,
        }),
        value,
      ),
    }),
  ),
);

/**
 * Well-formed writes of a worker that holds the running run, with any step key, kind and revision: a
 * worker that is broken or hostile still cannot change a result once recorded.
 */
const stepKey = fc.constantFrom('charge#1', 'ship#1', 'retry:charge#1', 'retry:ship#1', 'sleep:nap#1', 'event:approved#1', 'child:bill#1');
const wellFormed = (suffix: string, fields: Record<string, fc.Arbitrary<Fuzzed>>) =>
  fc.record({
    method: fc.constant<'POST'>('POST'),
    path: fc.constant<(string | Ref)[]>(['/v1/worker/runs/', heldRun, suffix]),
    contentType: fc.constant('application/json'),
    payload: fc.record(fields).map((json) => ({ json })),
  });
export const hostileWrites = fc.oneof(
  wellFormed('/suspend', {
    expectedRevision: heldRevision,
    key: stepKey,
    seq: fc.constantFrom(0, 1),
    kind: fc.constantFrom('sleep', 'event', 'retry'),
    name: fc.constantFrom('charge', 'ship', 'approved'),
    delayMs: fc.constantFrom(0, 60_000),
    attempts: fc.constantFrom(1, 3),
  }),
  wellFormed('/tasks', {
    expectedRevision: heldRevision,
    key: stepKey,
    seq: fc.constantFrom(0, 1),
    name: fc.constantFrom('charge', 'ship'),
    status: fc.constantFrom('completed', 'failed'),
    attempts: fc.constantFrom(1, 3),
    output: scalar,
    error: fc.constant({ message: 'boom' }),
  }),
  wellFormed('/children', {
    expectedRevision: heldRevision,
    key: stepKey,
    seq: fc.constantFrom(0, 1),
    name: fc.constantFrom('bill', 'charge'),
    workflow: fc.constant('echo'),
    version: fc.constant('1'),
    input: scalar,
    wait: fc.boolean(),
    timeoutMs: fc.constantFrom(null, 0),
  }),
);

/** Query strings of the list and result endpoints: parameters well-encoded or not, repeated, unknown. */
const queryPart = fc.oneof(
  fc.tuple(fc.constantFrom('workflow', 'status', 'limit', 'cursor', 'sort', 'waitMs', 'workflow[a]'), segment).map(([key, v]) => `${key}=${v}`),
  segment,
);
const query = fc.array(queryPart, { maxLength: 4 }).map((parts) => (parts.length > 0 ? `?${parts.join('&')}` : ''));
export const queries = fc.oneof(
  fc.record({ method: fc.constant<'GET'>('GET'), path: fc.tuple(fc.constant('/v1/runs'), query) }),
  // waitMs beyond 0 would long-poll: the result endpoint gets a query without it.
  fc.record({
    method: fc.constant<'GET'>('GET'),
    path: fc.tuple(
      fc.constant('/v1/runs/'),
      runSegment,
      fc.constant('/result'),
      query.filter((q) => !/waitMs=0*[1-9]/.test(q)),
    ),
  }),
);

/** The path (with the fixtures' ids in it) and the body text of a fuzzed request. */
export function resolveRequest({ path, payload }: FuzzRequest, fixtures: Fixtures): { path: string; body?: string } {
  const resolved = path.map((part) => (part instanceof Ref ? String(part.resolve(fixtures)) : part)).join('');
  if (!payload) return { path: resolved };
  if ('raw' in payload) return { path: resolved, body: payload.raw };
  if ('json' in payload) return { path: resolved, body: toJsonText(payload.json, fixtures) };
  return { path: resolved, body: toJsonText(payload.cut, fixtures).slice(0, payload.at) };
}
