import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { AnyJson, BuildId, Closed, RECORD_KEY, Flag, Identifier, IntegerIn, Key, ListOf, Nullable, OneOf, REASON, RunId, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { STEP_KINDS, TASK_STATUSES } from './run-status';
import { EventMatchSchema } from './event-match';
import { ErrorDetails } from './run.contracts';
import { checkExposedValue, checkProgress, EXPOSED_NAMES_MAX, ValueName } from './run-values.contracts';
import { Tags } from './tags';
import { TRACEPARENT_PATTERN, TRACESTATE_MAX_LENGTH } from '../trace-context';
import { decode, fail } from './validation';
import { PENDING_UPDATES_MAX, PendingUpdate } from './update.contracts';

/**
 * The worker protocol (worker <-> coordinator). Every write carries the revision the worker
 * received with its claim; the coordinator applies it only if the run is still running at that
 * revision (see libs/locking).
 */

/**
 * The largest `expectedRevision` a write takes. A revision is a PostgreSQL `integer`, and a write leaves the run at
 * revision + 1: at 2^31 - 1 no write could follow, and the statements that compute the next one would overflow
 * (`integer out of range`, a 500) rather than find no run at it.
 */
export const REVISION_MAX = 2 ** 31 - 2;
export const CLAIM_LIMIT_MAX = 500;
export const WAKEUPS_MAX = CLAIM_LIMIT_MAX;
export const REPORTS_MAX = 500;
/** Longest durable wait: 100 years. */
export const MAX_DELAY_MS = 100 * 365 * 24 * 3600 * 1000;
const ATTEMPTS_MAX = 1_000_000;
const SEQ_MAX = 1_000_000;

const Revision = IntegerIn('expectedRevision', 0, REVISION_MAX);
const Seq = IntegerIn('seq', 0, SEQ_MAX);
const Delay = (field: string) => IntegerIn(field, 0, MAX_DELAY_MS);
/** A discriminator value: refused (as `invalid_<field>`) when it names none of the variants. */
const Tag = <V extends string>(field: string, value: V) => Type.Literal(value, { [REASON]: `invalid_${field}` });
/** Variants told apart by `field` (OpenAPI's `discriminator`, which validation follows too). */
const discriminated = (field: string) => ({ discriminator: { propertyName: field } });

/**
 * A W3C trace context (see trace-context.ts): on a claimed run, the span its worker's run span is a child of (the
 * start's); on a worker's write, the worker's span the write belongs to, under which the coordinator records its
 * own. Absent when nothing is traced.
 */
export const traceFields = {
  traceparent: Type.Optional(Type.String({ pattern: TRACEPARENT_PATTERN, description: 'a W3C traceparent of version 00', [REASON]: 'invalid_traceparent' })),
  tracestate: Type.Optional(
    Type.String({
      maxLength: TRACESTATE_MAX_LENGTH,
      description: `a W3C tracestate of at most ${TRACESTATE_MAX_LENGTH} characters`,
      [REASON]: 'invalid_tracestate',
    }),
  ),
};

export const WorkflowRef = Closed(
  {
    name: Identifier('workflow'),
    version: Identifier('version'),
    /** Serve only runs started with this routing shard (default: runs without one). */
    shard: Type.Optional(Identifier('shard')),
  },
  { title: 'WorkflowRef' },
);
export type WorkflowRef = Static<typeof WorkflowRef>;

export const WorkerPath = Type.Object({ id: RunId('run_id') });

export const ClaimRequest = withDefaults(
  Closed(
    {
      workerId: Key('workerId'),
      /** Recorded on the runs it takes (absent: an older worker; their build id is then null). */
      buildId: Type.Optional(BuildId('buildId')),
      workflows: ListOf('workflows', WorkflowRef, 1, 1000, 'workflow versions'),
      limit: IntegerIn('limit', 1, CLAIM_LIMIT_MAX),
      waitMs: Type.Optional(IntegerIn('waitMs', 0, 60_000)),
    },
    { title: 'ClaimRequest' },
  ),
  { waitMs: 0 },
);
export type ClaimRequest = StaticDecode<typeof ClaimRequest>;

/**
 * An idle worker of a Redis subscriber offering itself to the starts of one coordinator (see
 * API.offerRuns): that coordinator hands it a run started there, in the start's own commit, as it
 * hands runs to a waiting claim; it never claims anything for the offer itself.
 */
export const OfferRequest = Closed(
  {
    offerId: RunId('offerId'),
    workerId: Key('workerId'),
    /** Recorded on the run a start hands it (absent: an older worker). */
    buildId: Type.Optional(BuildId('buildId')),
    workflows: ListOf('workflows', WorkflowRef, 1, 1000, 'workflow versions'),
    waitMs: IntegerIn('waitMs', 0, 60_000),
  },
  { title: 'OfferRequest' },
);
export type OfferRequest = StaticDecode<typeof OfferRequest>;
export const OfferPath = Type.Object({ offerId: RunId('offerId') });

/**
 * A recorded step (a task result or a resolved suspension), handed back to the worker so a
 * re-executed run replays it.
 */
export const StoredTask = Closed(
  {
    key: Type.String(),
    kind: OneOf('kind', STEP_KINDS),
    seq: Type.Integer({ description: "position in the workflow's call order" }),
    status: OneOf('status', [...TASK_STATUSES, 'waiting']),
    attempts: Type.Integer(),
    output: AnyJson(),
    error: Nullable(ErrorDetails),
  },
  { title: 'StoredTask' },
);
export type StoredTask = Static<typeof StoredTask>;

export const ClaimedRun = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    workflow: Type.String(),
    version: Type.String(),
    queue: Type.String({ description: 'where it waited: `<workflow>:<version>[:<shard>]`' }),
    wakeup: Type.Optional(Type.String({ description: 'for a take: the wake-up (as the worker named it) this run was taken with' })),
    revision: Type.Integer(),
    attempt: Type.Integer(),
    input: AnyJson(),
    tasks: Type.Array(StoredTask),
    ...traceFields,
  },
  { title: 'ClaimedRun' },
);
export type ClaimedRun = Static<typeof ClaimedRun>;

export const ClaimResponse = Closed({ runs: Type.Array(ClaimedRun) }, { title: 'ClaimResponse' });
export type ClaimResponse = Static<typeof ClaimResponse>;

export const HeartbeatRequest = Closed(
  {
    workerId: Key('workerId'),
    runs: ListOf('runs', Closed({ id: RunId('id'), expectedRevision: Revision }), 0, 10_000, 'runs this worker holds'),
  },
  { title: 'HeartbeatRequest' },
);
export type HeartbeatRequest = StaticDecode<typeof HeartbeatRequest>;

export const HeartbeatResponse = Closed(
  { lost: Type.Array(Type.String(), { description: 'runs this worker no longer owns: it must stop them and write nothing more' }) },
  { title: 'HeartbeatResponse' },
);
export type HeartbeatResponse = Static<typeof HeartbeatResponse>;

/** An error as a worker reports it (the engine's own `reason` is not a worker's to give). */
export const ReportedError = Type.Transform(
  JsonDocument(
    'error',
    Closed({
      name: Type.Optional(Type.String({ description: 'a string (default Error)', [REASON]: 'invalid_error' })),
      message: Type.String({ description: 'a string', [REASON]: 'invalid_error' }),
      stack: Type.Optional(Type.String({ description: 'a string', [REASON]: 'invalid_error' })),
      nonRetryable: Type.Optional(Type.Boolean({ description: 'a boolean', [REASON]: 'invalid_error' })),
    }),
    'an error: {name?, message, stack?, nonRetryable?}',
  ),
)
  .Decode(
    ({ name, message, stack, nonRetryable }): ErrorDetails => ({
      name: name ?? 'Error',
      message,
      ...(stack === undefined ? {} : { stack }),
      ...(nonRetryable === undefined ? {} : { nonRetryable }),
    }),
  )
  .Encode((error) => error);

/** A day: a task that runs longer is still recorded, its duration capped there. */
export const TASK_DURATION_MS_MAX = 86_400_000;

/** The most attempts of one execution of a task whose times are recorded (a worker sends the last ones). */
export const ATTEMPT_TIMES_MAX = 100;

/** One attempt of a task, timed on the worker's monotonic clock from the start of the execution (`durationMs`'s). */
export const AttemptTime = Closed(
  {
    offsetMs: IntegerIn('offsetMs', 0, TASK_DURATION_MS_MAX),
    durationMs: IntegerIn('durationMs', 0, TASK_DURATION_MS_MAX),
  },
  { title: 'AttemptTime' },
);
export type AttemptTime = Static<typeof AttemptTime>;

const taskFields = {
  expectedRevision: Revision,
  key: Key('key'),
  seq: Seq,
  name: Key('name'),
  /** Measured on the worker (a monotonic clock): its start is recorded as this long before the result. */
  durationMs: Type.Optional(IntegerIn('durationMs', 0, TASK_DURATION_MS_MAX)),
  /** Each attempt of this execution (the last ATTEMPT_TIMES_MAX), oldest first; absent for one attempt, and from older workers. */
  attemptTimes: Type.Optional(ListOf('attemptTimes', AttemptTime, 1, ATTEMPT_TIMES_MAX, 'attempts')),
};

/**
 * A task's result: its output once completed, its error once failed (the first one written for a key wins); or a
 * patch marker, recorded the same way so that it travels with the run's other reports.
 */
export const TaskResultRequest = Type.Union(
  [
    withDefaults(
      Closed({
        ...taskFields,
        status: Tag('status', 'completed'),
        /** `task` (the default), or `patch`: the marker `ctx.patched` records (its output null). */
        kind: Type.Optional(Type.Union([Type.Literal('task'), Type.Literal('patch')], { description: 'task (default) or patch', [REASON]: 'invalid_kind' })),
        attempts: IntegerIn('attempts', 1, ATTEMPTS_MAX),
        output: Type.Optional(JsonDocument('output')),
        error: Type.Optional(Type.Null({ description: 'null', [REASON]: 'invalid_error' })),
      }),
      { output: null, error: null },
    ),
    withDefaults(
      Closed({
        ...taskFields,
        status: Tag('status', 'failed'),
        attempts: IntegerIn('attempts', 1, ATTEMPTS_MAX),
        output: Type.Optional(Type.Null({ description: 'null', [REASON]: 'invalid_output' })),
        error: ReportedError,
      }),
      { output: null },
    ),
  ],
  { title: 'TaskResultRequest', ...discriminated('status') },
);
export type TaskResultRequest = StaticDecode<typeof TaskResultRequest>;

export const TaskResultResponse = Closed(
  { task: StoredTask },
  { title: 'TaskResultResponse', description: 'the recorded result: the first one written for this key wins, later writers adopt it' },
);
export type TaskResultResponse = Static<typeof TaskResultResponse>;

export const CompleteRunRequest = withDefaults(
  Closed({ expectedRevision: Revision, output: Type.Optional(JsonDocument('output')) }, { title: 'CompleteRunRequest' }),
  {
    output: null,
  },
);
export type CompleteRunRequest = StaticDecode<typeof CompleteRunRequest>;

export const FailRunRequest = Closed(
  {
    expectedRevision: Revision,
    error: ReportedError,
    /** Retry the whole run (attempt + 1) after this delay instead of failing it. */
    retryDelayMs: Type.Optional(Delay('retryDelayMs')),
  },
  { title: 'FailRunRequest' },
);
export type FailRunRequest = StaticDecode<typeof FailRunRequest>;

export const ReleaseRunRequest = Closed({ expectedRevision: Revision }, { title: 'ReleaseRunRequest' });
export type ReleaseRunRequest = StaticDecode<typeof ReleaseRunRequest>;

export const RevisionResponse = Closed({ revision: Type.Integer({ description: "the run's revision after the write" }) }, { title: 'RevisionResponse' });
export type RevisionResponse = Static<typeof RevisionResponse>;

const stepFields = { expectedRevision: Revision, key: Key('key'), seq: Seq, ...traceFields };
const Attempts = Type.Optional(IntegerIn('attempts', 0, ATTEMPTS_MAX));

/**
 * Suspends the run at a step until it is due again (the run's worker slot is freed):
 * `sleep` for `delayMs`; `event` until an event called `name` (whose data has the `match` values, if given) arrives
 * (or `delayMs` passes, if not null);
 * `retry` of task `name` after `delayMs` (with `attempts` made so far); `external` until the completion token
 * recorded at `token:<same name and occurrence>` is completed or failed, or expires.
 */
export const SuspendRequest = Type.Union(
  [
    withDefaults(Closed({ ...stepFields, kind: Tag('kind', 'sleep'), name: Key('name'), delayMs: Delay('delayMs'), attempts: Attempts }), { attempts: 0 }),
    withDefaults(
      Closed({
        ...stepFields,
        kind: Tag('kind', 'event'),
        name: Identifier('name'),
        delayMs: Type.Optional(Nullable(Delay('delayMs'))),
        attempts: Attempts,
        /** Only an event whose data has these field values resolves the wait (event-match.ts). */
        match: Type.Optional(EventMatchSchema),
      }),
      {
        delayMs: null,
        attempts: 0,
      },
    ),
    withDefaults(
      Closed({
        ...stepFields,
        kind: Tag('kind', 'retry'),
        name: Key('name'),
        delayMs: Delay('delayMs'),
        attempts: Attempts,
        /** The execution that ends in this wait, as a task result times it (its start is recorded this long before now)... */
        durationMs: Type.Optional(IntegerIn('durationMs', 0, TASK_DURATION_MS_MAX)),
        /** ...and its attempts (the last ones are `attempts`): kept with the wait, shown with the task. */
        attemptTimes: Type.Optional(ListOf('attemptTimes', AttemptTime, 1, ATTEMPT_TIMES_MAX, 'attempts')),
      }),
      { attempts: 0 },
    ),
    // No delay: the wait ends when its token expires, a time the coordinator recorded with the token.
    withDefaults(Closed({ ...stepFields, kind: Tag('kind', 'external'), name: Key('name'), attempts: Attempts }), { attempts: 0 }),
  ],
  { title: 'SuspendRequest', ...discriminated('kind') },
);
export type SuspendRequest = StaticDecode<typeof SuspendRequest>;

/** Starts a child run; with `wait`, the parent suspends until the child is terminal (or `timeoutMs` passes). */
export const StartChildRequest = withDefaults(
  Closed(
    {
      ...stepFields,
      name: Key('name'),
      workflow: Identifier('workflow'),
      version: Identifier('version'),
      input: Type.Optional(JsonDocument('input')),
      wait: Flag('wait'),
      timeoutMs: Type.Optional(Nullable(Delay('timeoutMs'))),
      /** Routing shard of the child. Absent: the parent's shard; null: no shard. */
      shard: Type.Optional(Nullable(Identifier('shard'))),
      /** Tags of the child. Absent: the parent's. */
      tags: Type.Optional(Tags),
    },
    { title: 'StartChildRequest' },
  ),
  { input: null, timeoutMs: null },
);
export type StartChildRequest = StaticDecode<typeof StartChildRequest>;

/**
 * `suspended: false` means the step resolved at once (event already sent, child already done, zero delay), or, with
 * `updates`, that updates wait to be applied at this wait first (the step is recorded `waiting`; the worker applies
 * and records them, then sends the step again).
 */
export const StepResponse = Closed(
  { suspended: Type.Boolean(), task: StoredTask, updates: Type.Optional(Type.Array(PendingUpdate, { maxItems: PENDING_UPDATES_MAX })) },
  { title: 'StepResponse' },
);
export type StepResponse = Static<typeof StepResponse>;

/**
 * Wake-ups a transport (Redis) delivered, per queue: the worker holds these for that workflow version
 * (and shard) and has a free slot for each. Each is named by the worker (a stream entry, a set member;
 * unique within its queue, and stable: a dead letter names it the same way). The coordinator takes the
 * queue's best runs for them, as a claim would (work stealing first, then priority, then due time), so
 * every limit is decided in PostgreSQL whatever the transport.
 */
export const TakeRunsRequest = Type.Transform(
  Closed(
    {
      workerId: Key('workerId'),
      /** Recorded on the runs it takes (absent: an older worker). */
      buildId: Type.Optional(BuildId('buildId')),
      workflows: ListOf(
        'workflows',
        Closed({ ...WorkflowRef.properties, wakeups: ListOf('wakeups', Key('wakeups'), 1, WAKEUPS_MAX, 'wake-up names', { uniqueItems: true }) }),
        1,
        1000,
        `workflow versions with their wake-ups (${WAKEUPS_MAX} in all)`,
      ),
    },
    { title: 'TakeRunsRequest' },
  ),
)
  .Decode((request) => {
    const total = request.workflows.reduce((sum, ref) => sum + ref.wakeups.length, 0);
    if (total > WAKEUPS_MAX) fail('invalid_wakeups', `${total} wake-ups; at most ${WAKEUPS_MAX} runs are taken at once`);
    return request;
  })
  .Encode((request) => request);
export type TakeRunsRequest = StaticDecode<typeof TakeRunsRequest>;

export const TakeRunsResponse = Closed(
  {
    runs: Type.Array(ClaimedRun, { description: 'at most one run per wake-up of each queue, each with the wake-up it was taken with' }),
    requeue: Type.Array(Closed({ queue: Type.String(), wakeup: Type.String() }), {
      description:
        'wake-ups that took nothing although their queue still has runs waiting (taken elsewhere at that very moment, or locked): give them back to the transport. Every other unused wake-up is done with',
    }),
  },
  { title: 'TakeRunsResponse' },
);
export type TakeRunsResponse = Static<typeof TakeRunsResponse>;

/**
 * A Streams message delivered more than MAX_DELIVERIES times (its workers kept dying or hanging):
 * the worker hands it to the coordinator, which records it as a dead letter and fails its run as
 * `stalled` if that run is still held by a claim that went idle.
 */
export const StreamDeadLetterReport = Closed(
  {
    workerId: Key('workerId'),
    workflow: WorkflowRef,
    wakeup: Key('wakeup'),
    runId: Type.Optional(RunId('runId')),
    deliveries: IntegerIn('deliveries', 1, 1_000_000_000),
  },
  { title: 'StreamDeadLetterReport' },
);
export type StreamDeadLetterReport = StaticDecode<typeof StreamDeadLetterReport>;

export const StreamDeadLetterResponse = Closed(
  { deadLetterId: Type.String(), runFailed: Type.Boolean({ description: 'true when the run was failed (`stalled`) because of it' }) },
  { title: 'StreamDeadLetterResponse' },
);
export type StreamDeadLetterResponse = Static<typeof StreamDeadLetterResponse>;

/**
 * What a run exposes, sent by its worker under the claim (revision-fenced; nothing moves the run on): values by
 * name (`ctx.expose`, and its query handlers' answers), each the last one for its name, and its progress
 * (`ctx.progress`, the last value; null is one too). Sizes are checked as the worker checks them before sending.
 */
export const RunValuesRequest = Type.Transform(
  Closed(
    {
      expectedRevision: Revision,
      exposed: Type.Optional(
        Type.Record(ValueName, JsonDocument('value'), {
          maxProperties: EXPOSED_NAMES_MAX,
          additionalProperties: false,
          description: `values by name (at most ${EXPOSED_NAMES_MAX})`,
          [REASON]: 'invalid_exposed',
          [RECORD_KEY]: ValueName,
        }),
      ),
      progress: Type.Optional(JsonDocument('progress')),
    },
    { title: 'RunValuesRequest' },
  ),
)
  .Decode((request) => {
    for (const [name, value] of Object.entries(request.exposed ?? {})) checkExposedValue(name, value);
    if (request.progress !== undefined) checkProgress(request.progress);
    return request;
  })
  .Encode((request) => request);
export type RunValuesRequest = StaticDecode<typeof RunValuesRequest>;

/**
 * Several writes of one worker in one request and one transaction (`POST /v1/worker/reports`): the
 * worker coalesces the task results and outcomes of its concurrent runs, so a busy worker pays one
 * round trip and one commit for many of them. Each report is checked on its own.
 */
export const WorkerReport = Type.Union(
  [
    Closed({ type: Tag('type', 'task'), runId: RunId('runId'), task: TaskResultRequest, ...traceFields }),
    Closed({ type: Tag('type', 'complete'), runId: RunId('runId'), complete: CompleteRunRequest, ...traceFields }),
    Closed({ type: Tag('type', 'fail'), runId: RunId('runId'), fail: FailRunRequest, ...traceFields }),
    Closed({ type: Tag('type', 'values'), runId: RunId('runId'), values: RunValuesRequest, ...traceFields }),
  ],
  { title: 'WorkerReport', ...discriminated('type') },
);
export type WorkerReport = StaticDecode<typeof WorkerReport>;

export const ReportsRequest = Closed({ reports: ListOf('reports', WorkerReport, 1, REPORTS_MAX, 'reports') }, { title: 'ReportsRequest' });

/** The worker checks each report with these rules before it sends it, so one bad report fails only its own run. */
export function parseReportsRequest(raw: unknown): WorkerReport[] {
  return decode(ReportsRequest, raw, 'request body').reports;
}

export const ReportOutcome = Type.Union(
  [
    Closed({
      ok: Type.Literal(true),
      result: Type.Union([StoredTask, RevisionResponse], { description: 'a task report: the recorded task; an outcome or values: the revision' }),
    }),
    Closed(
      { ok: Type.Literal(false), statusCode: Type.Integer(), reason: Type.String(), message: Type.String() },
      { description: 'refused, as the request alone would have been' },
    ),
  ],
  { title: 'ReportOutcome' },
);
export type ReportOutcome = Static<typeof ReportOutcome>;

export const ReportsResponse = Closed({ outcomes: Type.Array(ReportOutcome, { description: 'one per report, in order' }) }, { title: 'ReportsResponse' });
export type ReportsResponse = Static<typeof ReportsResponse>;
