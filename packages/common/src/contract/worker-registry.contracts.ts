import { Kind, type Static, type TUnsafe, Type, TypeRegistry } from '@sinclair/typebox';
import { BuildId, Closed, Flag, Identifier, IntegerIn, Key, ListOf } from './fields';
import { INPUT_SCHEMA_MAX_BYTES, readInputSchema } from './input-schema';
import type { JsonValue } from './json-document';
import { WorkflowLimits } from './workflow-control.contracts';
import { DeclaredSchedule } from './schedule.contracts';
import { DECLARED_UPDATES_MAX } from './update.contracts';

/**
 * The worker registry: each worker tells the coordinators, at start and then periodically, what it is
 * and what it hosts. The registry answers "who is alive and what does it serve" (GET /v1/workers), and
 * is where workflows' code-declared settings reach the coordinators.
 */

/** The most workflow versions one worker may register. */
export const REGISTERED_WORKFLOWS_MAX = 1_000;
const SHARDS_MAX = 100;
export const DECLARED_SCHEDULES_MAX = 100;
/** The longest registration interval accepted: an hour. */
export const REGISTRATION_INTERVAL_MAX_MS = 3_600_000;

/** The longest retention window a workflow may declare: 100 years. */
export const RETENTION_MAX_MS = 100 * 365 * 86_400_000;

const INPUT_SCHEMA_KIND = 'NestDurable/InputSchema';

// Accepted as readInputSchema accepts it (workers check with it when the workflow is declared).
TypeRegistry.Set(INPUT_SCHEMA_KIND, (_schema, value) => {
  try {
    readInputSchema(value);
    return true;
  } catch {
    return false;
  }
});

/** A declared input schema: a JSON Schema object the coordinators can check inputs with (see input-schema.ts). */
const InputSchemaField: TUnsafe<{ [key: string]: JsonValue }> = Type.Unsafe({
  [Kind]: INPUT_SCHEMA_KIND,
  type: 'object',
  'x-reason': 'invalid_input_schema',
  description: `a JSON Schema object of at most ${INPUT_SCHEMA_MAX_BYTES} bytes, of the keywords the input check supports (see the README's input schemas)`,
});

/** A workflow version a worker hosts, with the routing shards it serves it in (empty: runs without a shard). */
export const RegisteredWorkflow = Closed(
  {
    name: Identifier('workflow'),
    version: Identifier('version'),
    shards: ListOf('shards', Identifier('shard'), 0, SHARDS_MAX, 'routing shards', { uniqueItems: true }),
    /** As declared in code (defineWorkflow({ limits })); the coordinator keeps them as the version's code limits. */
    limits: Type.Optional(WorkflowLimits),
    /** How long its finished runs are kept (`defineWorkflow({ retentionMs })`); absent: the coordinator's RUN_RETENTION_MS. */
    retentionMs: Type.Optional(IntegerIn('retentionMs', 0, RETENTION_MAX_MS)),
    /** The schema its runs' input must match (`inputSchema`); absent: any JSON input. Starts are checked against it. */
    inputSchema: Type.Optional(InputSchemaField),
    /** The updates its code declares (`updates`), each with the schema its input must match; absent: none. */
    updates: Type.Optional(
      ListOf('updates', Closed({ name: Identifier('update_name'), inputSchema: Type.Optional(InputSchemaField) }), 0, DECLARED_UPDATES_MAX, 'declared updates'),
    ),
    /** The schedules its code declares (absent: a worker that does not say, whose registration leaves them alone). */
    schedules: Type.Optional(ListOf('schedules', DeclaredSchedule, 0, DECLARED_SCHEDULES_MAX, 'schedules declared in code')),
  },
  { title: 'RegisteredWorkflow' },
);
export type RegisteredWorkflow = Static<typeof RegisteredWorkflow>;

export const WorkerRegistration = Closed(
  {
    /** Which build of its code it runs (absent: an older worker that does not say). */
    buildId: Type.Optional(BuildId('buildId')),
    subscriber: Key('subscriber'),
    /** The primary subscriber failed and the worker takes work over HTTP until it recovers. */
    failedOver: Flag('failedOver'),
    concurrency: IntegerIn('concurrency', 1, 100_000),
    /** Runs the worker holds now: executing, or reporting their outcome (up to twice its concurrency). */
    runsHeld: IntegerIn('runsHeld', 0, 100_000),
    /** When the worker registers next: the coordinator counts it offline after three intervals without one. */
    intervalMs: IntegerIn('intervalMs', 100, REGISTRATION_INTERVAL_MAX_MS),
    workflows: ListOf('workflows', RegisteredWorkflow, 1, REGISTERED_WORKFLOWS_MAX, 'workflow versions'),
  },
  { title: 'WorkerRegistration' },
);
export type WorkerRegistration = Static<typeof WorkerRegistration>;

export const WorkerIdPath = Type.Object({ workerId: Key('workerId') });

const Time = Type.String({ format: 'date-time' });

export const WorkerView = Closed(
  {
    id: Type.String(),
    buildId: Type.Union([Type.String(), Type.Null()], { description: 'the build of its code it registered with (null: it did not say)' }),
    subscriber: Type.String(),
    failedOver: Type.Boolean(),
    concurrency: Type.Integer(),
    runsHeld: Type.Integer({ description: 'runs it held at its last registration: executing, or reporting their outcome (up to twice its concurrency)' }),
    online: Type.Boolean({ description: 'it registered within three of its intervals' }),
    startedAt: Time,
    lastSeenAt: Time,
    workflows: Type.Array(RegisteredWorkflow),
  },
  { title: 'WorkerView' },
);
export type WorkerView = Static<typeof WorkerView>;

export const WorkerList = Closed({ items: Type.Array(WorkerView) }, { title: 'WorkerList' });
export type WorkerList = Static<typeof WorkerList>;
