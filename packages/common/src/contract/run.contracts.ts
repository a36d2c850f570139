import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { AnyJson, Closed, Identifier, IntegerIn, Key, ListOf, Nullable, OneOf, RunId, Timestamp, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { RUN_STATUSES, STEP_KINDS, TASK_STATUSES } from './run-status';
import { TagFilters, Tags } from './tags';

/** The client API's schemas: runs as clients see them, and what clients send. */

const Text = Type.String();
const Time = Type.String({ format: 'date-time' });
const NullableTime = Type.Union([Time, Type.Null()]);

/** Failure details stored for a failed task or run. */
export const ErrorDetails = Closed(
  {
    name: Text,
    message: Text,
    stack: Type.Optional(Text),
    /** The error was thrown as nonRetryable (WorkflowError): a replay of its failure is not retried either. */
    nonRetryable: Type.Optional(Type.Boolean({ description: 'thrown as nonRetryable: neither the task nor its run is retried' })),
    /** Set when the engine itself failed the run, e.g. `stalled` (see RUN_FAILURE_REASONS). */
    reason: Type.Optional(Type.String({ description: 'set when the engine itself failed the run, e.g. `stalled`' })),
  },
  { title: 'ErrorDetails' },
);
export type ErrorDetails = Static<typeof ErrorDetails>;

export const TaskView = Closed(
  {
    key: Text,
    kind: OneOf('kind', STEP_KINDS),
    seq: Type.Integer({ description: "position in the workflow's call order (a task and its retry wait share one)" }),
    name: Text,
    status: OneOf('status', [...TASK_STATUSES, 'waiting']),
    attempts: Type.Integer(),
    output: AnyJson(),
    error: Nullable(ErrorDetails),
    createdAt: Time,
    startedAt: Type.Union([Time, Type.Null()], {
      description: 'when the step began: a suspension step when the run suspended there; null for a task (its start is not reported)',
    }),
    finishedAt: Type.Union([Time, Type.Null()], { description: 'when it ended: a task when its result was recorded, a suspension step when it resolved' }),
    wakeAt: Type.Union([Time, Type.Null()], { description: 'a sleep, a retry wait, or a wait with a timeout: when it is (or was) due to end' }),
    attemptTimes: Type.Optional(
      Type.Array(Closed({ attempt: Type.Integer(), startedAt: Time, durationMs: Type.Integer() }, { title: 'TaskAttemptView' }), {
        description:
          "a task retried in its worker: each attempt of the execution that recorded it (the last 100), oldest first, its start on the coordinator's clock; absent for a single attempt (the task's own start and end) and from workers that send none",
      }),
    ),
    childId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'a child step: the child run' }),
  },
  { title: 'TaskView' },
);
export type TaskView = Static<typeof TaskView>;

export const RunView = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    workflow: Text,
    version: Text,
    status: OneOf('status', RUN_STATUSES),
    revision: Type.Integer(),
    attempt: Type.Integer(),
    priority: Type.Integer(),
    stalls: Type.Integer({ description: 'times the run was taken over after its worker stopped heartbeating' }),
    input: AnyJson(),
    output: AnyJson(),
    error: Nullable(ErrorDetails),
    idempotencyKey: Type.Union([Text, Type.Null()]),
    shard: Type.Union([Text, Type.Null()], { description: 'routing shard (null: none)' }),
    concurrencyKey: Type.Union([Text, Type.Null()], {
      description: "runs with the same key share their version's concurrencyPerKey slots and ratePerKeyPerSecond tokens (null: none)",
    }),
    paused: Type.Boolean({ description: 'true while the run waits (queued or waiting) under a pause of its workflow version or shard' }),
    parentId: Type.Union([Text, Type.Null()]),
    buildId: Type.Union([Text, Type.Null()], {
      description:
        "the build id of the worker that executed it last (its worker's `buildId`); null until a worker took it, or when that worker did not send one",
    }),
    tags: Type.Record(Text, Text, { description: 'the tags it was started with' }),
    runAt: Type.Union([Time, Type.Null()], { description: 'when the run is (or was) due; null while it waits for an event or a child without a timeout' }),
    createdAt: Time,
    updatedAt: Time,
    startedAt: NullableTime,
    finishedAt: NullableTime,
    progress: AnyJson('the last progress the run reported (ctx.progress), kept after it ended; null until one was (see progressAt)'),
    progressAt: Type.Union([Time, Type.Null()], { description: 'when the last progress was recorded; null until one was' }),
    tasks: Type.Optional(Type.Array(TaskView, { description: 'its steps (with a single run, not in lists)' })),
    traceId: Type.Optional(Type.String({ description: 'the OpenTelemetry trace its spans are in (32 hex digits), when its start was traced' })),
  },
  { title: 'RunView' },
);
export type RunView = Static<typeof RunView>;

/**
 * A run's recorded history: the run and its steps in the order they were made. One JSON line of `wf runs export`
 * each (the run's view without `tasks`, and its steps' views), what `replayHistories` (@nest-durable/worker) replays
 * against new code. Read back for what a replay needs; the views' other fields may be there (they are not checked).
 */
export const RecordedHistory = Type.Object(
  {
    run: Type.Object({ id: Text, workflow: Text, version: Text, status: OneOf('status', RUN_STATUSES), attempt: Type.Integer(), input: AnyJson() }),
    steps: Type.Array(
      Type.Object({
        key: Text,
        kind: OneOf('kind', STEP_KINDS),
        seq: Type.Integer(),
        status: OneOf('status', [...TASK_STATUSES, 'waiting']),
        attempts: Type.Integer(),
        output: AnyJson(),
        error: Nullable(ErrorDetails),
      }),
    ),
  },
  { title: 'RecordedHistory' },
);
export type RecordedHistory = Static<typeof RecordedHistory>;

export const RunPage = Closed(
  { runs: Type.Array(RunView), nextCursor: Type.Union([Text, Type.Null()], { description: 'pass it back as `cursor` for the next page' }) },
  { title: 'RunPage' },
);
export type RunPage = Static<typeof RunPage>;

/** What a start may warn of: it started the run, but something about it looks wrong. */
export const START_WARNINGS = ['unregistered_workflow_version'] as const;

/**
 * `unregistered_workflow_version`: no worker has ever registered the workflow version (a misspelled name or
 * version, or one not deployed yet): its run waits until a worker hosting it comes.
 */
export const StartWarning = Closed(
  { reason: OneOf('reason', START_WARNINGS), message: Type.String({ description: 'one line for a person' }) },
  { title: 'StartWarning' },
);
export type StartWarning = Static<typeof StartWarning>;

/** A run as a start answers it: the run, and what the start warns of, if anything. */
export const StartedRunView = Closed(
  { ...RunView.properties, warning: Type.Optional(StartWarning) },
  { title: 'StartedRunView', description: 'the run; `warning` when the start warns of something (the run was started all the same)' },
);
export type StartedRunView = Static<typeof StartedRunView>;

export const StartedRuns = Closed({ runs: Type.Array(StartedRunView, { description: 'in request order' }) }, { title: 'StartedRuns' });
export type StartedRuns = Static<typeof StartedRuns>;

export const PRIORITY_MIN = -1000;
export const PRIORITY_MAX = 1000;

export const StartRunRequest = withDefaults(
  Closed(
    {
      workflow: Identifier('workflow'),
      version: Identifier('version'),
      input: Type.Optional(JsonDocument('input')),
      idempotencyKey: Type.Optional(Key('idempotencyKey')),
      /** Routing shard (e.g. a region): only workers serving that shard take the run. */
      shard: Type.Optional(Identifier('shard')),
      /** Higher runs first among runs that are due. */
      priority: Type.Optional(IntegerIn('priority', PRIORITY_MIN, PRIORITY_MAX)),
      runAt: Type.Optional(Timestamp('runAt')),
      /** Runs with the same key share their version's `concurrencyPerKey` slots and `ratePerKeyPerSecond` tokens. */
      concurrencyKey: Type.Optional(Key('concurrencyKey')),
      /** Metadata to find the run by (`GET /v1/runs?tag=key:value`). */
      tags: Type.Optional(Tags),
    },
    { title: 'StartRunRequest' },
  ),
  { input: null, priority: 0 },
);
export type StartRunRequest = StaticDecode<typeof StartRunRequest>;

export const BATCH_MAX = 1_000;

/** `POST /v1/runs/batch`: up to BATCH_MAX runs in one transaction. */
export const StartRunsBatch = Closed({ runs: ListOf('runs', StartRunRequest, 1, BATCH_MAX, 'runs to start') }, { title: 'StartRunsBatch' });
export type StartRunsBatch = StaticDecode<typeof StartRunsBatch>;

export const LIST_LIMIT_MAX = 500;

/** What the runs list filters by: the same filter selects the runs a bulk cancel or retry acts on (run-actions.contracts.ts). */
export const runFilterFields = {
  workflow: Type.Optional(Identifier('workflow')),
  version: Type.Optional(Identifier('version')),
  status: Type.Optional(OneOf('status', RUN_STATUSES)),
  /** Keys are unique per workflow: searching by one needs `workflow` too (400 otherwise). */
  idempotencyKey: Type.Optional(Key('idempotencyKey')),
  /** Runs created from this time on (inclusive)... */
  createdAfter: Type.Optional(Timestamp('createdAfter')),
  /** ...and before this one (exclusive). */
  createdBefore: Type.Optional(Timestamp('createdBefore')),
  /** Only runs with every tag named (null: two filters named one key with different values, so none match). */
  tag: Type.Optional(TagFilters),
};

export const ListRunsQuery = withDefaults(
  Closed({
    ...runFilterFields,
    limit: Type.Optional(IntegerIn('limit', 1, LIST_LIMIT_MAX)),
    cursor: Type.Optional(RunId('cursor')),
  }),
  { limit: 50 },
);
export type ListRunsQuery = StaticDecode<typeof ListRunsQuery>;

export const WAIT_MS_MAX = 60_000;

export const RunResultQuery = withDefaults(Closed({ waitMs: Type.Optional(IntegerIn('waitMs', 0, WAIT_MS_MAX)) }), { waitMs: 0 });

export const RunPath = Type.Object({ id: RunId('run_id') });
export const RunEventPath = Type.Object({ id: RunId('run_id'), name: Identifier('event_name') });

export const SendEventRequest = withDefaults(Closed({ data: Type.Optional(JsonDocument('data')) }, { title: 'SendEventRequest' }), { data: null });
export type SendEventRequest = StaticDecode<typeof SendEventRequest>;

export const EventAccepted = Closed(
  { delivered: Type.Boolean({ description: 'true when the run was waiting for this event and has been woken; false when it is kept for a later wait' }) },
  { title: 'EventAccepted' },
);
export type EventAccepted = Static<typeof EventAccepted>;
