import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { Closed, Identifier, IntegerIn, Nullable, REASON } from './fields';

/** Flow control of workflow versions: pause and resume (of a version or one shard of it), concurrency and rate limits. */

export const CONCURRENCY_MAX = 100_000;
export const RATE_PER_SECOND_MAX = 100_000;

const Concurrency = (field: string) => Nullable(IntegerIn(field, 1, CONCURRENCY_MAX));
const Rate = (field: string) =>
  Nullable(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: RATE_PER_SECOND_MAX,
      description: `a number of runs per second above 0, at most ${RATE_PER_SECOND_MAX}`,
      [REASON]: `invalid_${field}`,
    }),
  );

/** Limits of a workflow version; null (or absent): no such limit. */
export const WorkflowLimits = Closed(
  {
    concurrency: Type.Optional(Concurrency('concurrency')),
    concurrencyPerKey: Type.Optional(Concurrency('concurrencyPerKey')),
    ratePerSecond: Type.Optional(Rate('ratePerSecond')),
    ratePerKeyPerSecond: Type.Optional(Rate('ratePerKeyPerSecond')),
  },
  { title: 'WorkflowLimits' },
);
export type WorkflowLimits = Static<typeof WorkflowLimits>;

const limitsView = (description: string) =>
  Closed(
    {
      concurrency: Type.Union([Type.Integer(), Type.Null()], { description: 'at most this many runs of the version running at once' }),
      concurrencyPerKey: Type.Union([Type.Integer(), Type.Null()], { description: 'at most this many runs of one concurrencyKey running at once' }),
      ratePerSecond: Type.Union([Type.Number(), Type.Null()], { description: 'at most this many runs started per second (token bucket)' }),
      ratePerKeyPerSecond: Type.Union([Type.Number(), Type.Null()], {
        description: 'at most this many runs of one concurrencyKey started per second (a token bucket per key; runs without a key are not limited by it)',
      }),
    },
    { description },
  );

export const WorkflowView = Closed(
  {
    name: Type.String(),
    version: Type.String(),
    paused: Type.Boolean({ description: 'the whole version is paused: its queued runs are not taken' }),
    pausedShards: Type.Array(Type.String(), { description: 'shards paused on their own' }),
    limits: limitsView('the limits in force: each one set through the API if it is, else as declared in code'),
    apiLimits: limitsView('set through PUT /v1/workflows/{name}/{version}/limits'),
    codeLimits: limitsView("declared in the workflow's definition (defineWorkflow({ limits })), registered by workers"),
    running: Type.Integer({ description: 'runs of the version holding a concurrency slot now' }),
    updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when its controls last changed; null: never set' }),
  },
  { title: 'WorkflowView' },
);
export type WorkflowView = Static<typeof WorkflowView>;

export const WorkflowList = Closed({ items: Type.Array(WorkflowView) }, { title: 'WorkflowList' });
export type WorkflowList = Static<typeof WorkflowList>;

export const WorkflowPath = Type.Object({ name: Identifier('workflow'), version: Identifier('version') });

/** Pause or resume: the whole version, or with `shard` one shard of it. */
export const PauseRequest = Closed({ shard: Type.Optional(Identifier('shard')) }, { title: 'PauseRequest' });
export type PauseRequest = StaticDecode<typeof PauseRequest>;
