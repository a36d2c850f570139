import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { EventMatchSchema } from './event-match';
import { Closed, Identifier, IntegerIn, Key, ListOf, Nullable, REASON, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { Tags } from './tags';
import { PENDING_UPDATES_MAX, PendingUpdate } from './update.contracts';
import { MAX_DELAY_MS, ReportedError, REVISION_MAX, StoredTask, traceFields } from './worker.contracts';

/** Branches of one `ctx.any` / `ctx.all` at most. */
export const GROUP_BRANCHES_MAX = 32;

const Delay = (field: string) => IntegerIn(field, 0, MAX_DELAY_MS);
const Kind = <V extends string>(value: V) => Type.Literal(value, { [REASON]: 'invalid_kind' });

/** One branch of a wait group. A task branch ran on the worker: it carries its outcome. */
export const GroupBranch = Type.Union(
  [
    Closed({ kind: Kind('event'), name: Identifier('name'), match: Type.Optional(EventMatchSchema) }),
    Closed({ kind: Kind('sleep'), delayMs: Delay('delayMs') }),
    withDefaults(
      Closed({
        kind: Kind('child'),
        workflow: Identifier('workflow'),
        version: Identifier('version'),
        input: Type.Optional(JsonDocument('input')),
        shard: Type.Optional(Nullable(Identifier('shard'))),
        tags: Type.Optional(Tags),
      }),
      { input: null },
    ),
    Closed({
      kind: Kind('task'),
      status: Type.Union([Type.Literal('completed'), Type.Literal('failed')], { description: 'completed or failed', [REASON]: 'invalid_status' }),
      attempts: IntegerIn('attempts', 1, 1_000_000),
      output: JsonDocument('output'),
      error: Nullable(ReportedError),
    }),
    // The wait on a completion token the run made (`ctx.awaitExternal`'s `result`): its `external:<name>#<n>` key.
    Closed({ kind: Kind('external'), name: Key('name'), key: Key('key') }),
  ],
  {
    description:
      'an event (by name, with an optional match), a sleep, a child run to start, a task that ran on the worker, or the wait on a completion token (its `external:` key)',
    discriminator: { propertyName: 'kind' },
  },
);
export type GroupBranch = StaticDecode<typeof GroupBranch>;

/**
 * Waits for a group of branches at one step: `any` resolves with the branch that finished first, `all` once every
 * branch finished. Sent again after the run woke, with the same branches, until the coordinator records the outcome.
 */
export const GroupRequest = Closed(
  {
    expectedRevision: IntegerIn('expectedRevision', 0, REVISION_MAX),
    key: Key('key'),
    seq: IntegerIn('seq', 0, 1_000_000),
    name: Key('name'),
    // Literals listed (not OneOf, whose array of literals decodes to `never` inside a transformed object).
    mode: Type.Union([Type.Literal('any'), Type.Literal('all')], { description: 'any or all', [REASON]: 'invalid_mode' }),
    branches: ListOf('branches', GroupBranch, 1, GROUP_BRANCHES_MAX, 'branches'),
    ...traceFields,
  },
  { title: 'GroupRequest' },
);
export type GroupRequest = StaticDecode<typeof GroupRequest>;

/**
 * The group step once resolved (`suspended: false`) with its branches' steps, or (`suspended: true`) one of its
 * waiting branches: the run waits until a branch finishes. Not resolved and not suspended, with `updates`: updates
 * wait to be applied at the group first (as at any wait, StepResponse); the worker records them and sends the group again.
 */
export const GroupResponse = Closed(
  {
    suspended: Type.Boolean(),
    task: StoredTask,
    branches: Type.Array(StoredTask, { description: 'the branch steps of a resolved group' }),
    updates: Type.Optional(Type.Array(PendingUpdate, { maxItems: PENDING_UPDATES_MAX })),
  },
  { title: 'GroupResponse' },
);
export type GroupResponse = Static<typeof GroupResponse>;

/** The recorded outcome of a group step (its `output`): which branch won an `any`. The branches' values are their own steps. */
export interface GroupOutcome {
  mode: 'any' | 'all';
  /** `any`: the position of the branch that finished first. */
  index?: number;
}

/** The key of branch `index` of the group step `groupKey`: recorded as a step of the branch's kind at the group's position. */
export function groupBranchKey(groupKey: string, index: number): string {
  return `${groupKey}/${index}`;
}
