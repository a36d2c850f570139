import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { Closed, Identifier, IntegerIn, OneOf, REASON, RunId, withDefaults } from './fields';
import { RUN_STATUSES } from './run-status';
import type { RunProgress } from './run-values.contracts';

/** What an operator's view (the dashboard, `wf stats`, `wf runs history`, `wf runs watch`) reads. */

const Text = Type.String();
const Time = Type.String({ format: 'date-time' });
const Count = Type.Integer({ minimum: 0 });
/** Milliseconds, or null when there is nothing to measure. */
const AgeMs = (description: string) => Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description });
const Status = OneOf('status', RUN_STATUSES);

export const STATS_WINDOWS = ['1h', '24h'] as const;
export type StatsWindow = (typeof STATS_WINDOWS)[number];
/** Each window's length in milliseconds. */
export const STATS_WINDOW_MS: Record<StatsWindow, number> = { '1h': 3_600_000, '24h': 86_400_000 };

/** Spelled out rather than OneOf: an optional OneOf decodes to `undefined` in TypeScript, which a default cannot fill. */
const WindowField = Type.Union([Type.Literal('1h'), Type.Literal('24h')], { description: `one of ${STATS_WINDOWS.join(', ')}`, [REASON]: 'invalid_window' });

export const StatsQuery = withDefaults(Closed({ window: Type.Optional(WindowField) }), { window: '1h' });
export type StatsQuery = StaticDecode<typeof StatsQuery>;

export const QueueDepth = Closed(
  {
    queue: Text,
    workflow: Text,
    version: Text,
    shard: Type.Union([Text, Type.Null()], { description: 'routing shard (null: none)' }),
    ready: Type.Integer({ minimum: 0, description: 'queued or waiting runs due now: a claim would take them' }),
    delayed: Type.Integer({ minimum: 0, description: 'queued runs due later (a `runAt` in the future, a retry of the whole run)' }),
    running: Type.Integer({ minimum: 0, description: 'claimed by a worker' }),
    waiting: Type.Integer({ minimum: 0, description: 'suspended until later: a sleep, an event, a child run or a task retry' }),
    oldestReadyAgeMs: AgeMs('how long the ready run due first has been due, in ms (null: none ready)'),
    hosted: Type.Boolean({ description: 'some worker online hosts this workflow version (and shard)' }),
  },
  { title: 'QueueDepth' },
);
export type QueueDepth = Static<typeof QueueDepth>;

export const Stats = Closed(
  {
    window: WindowField,
    generatedAt: Time,
    runs: Type.Array(Closed({ workflow: Text, version: Text, status: Status, count: Count }), {
      description: 'runs created in the window, by their current status',
    }),
    throughput: Type.Array(Closed({ minute: Time, started: Count, finished: Count }), {
      description: 'per minute of the window, oldest first: runs created (`started`) and runs that ended (`finished`)',
    }),
    queues: Type.Array(QueueDepth, { description: 'every queue with an unfinished run, and every queue an online worker serves' }),
    outbox: Closed({
      backlog: Type.Integer({ minimum: 0, description: 'wake-ups due for publishing to Redis (0 without a publisher)' }),
      oldestAgeMs: AgeMs('how long the oldest of them has been due, in ms (null: none)'),
    }),
    deadLetters: Type.Integer({ minimum: 0, description: 'dead letters (GET /v1/dead-letters)' }),
    workersOnline: Type.Integer({ minimum: 0, description: 'workers that registered within 3 of their intervals' }),
  },
  { title: 'Stats' },
);
export type Stats = Static<typeof Stats>;

/** The most transitions one answer lists (a run that loops over sleeps for months has many: page with `after`). */
export const TRANSITIONS_MAX = 1_000;

export const RunTransitionsQuery = withDefaults(
  Closed({
    limit: Type.Optional(IntegerIn('limit', 1, TRANSITIONS_MAX)),
    /** A transition's position (a bigint identity): at most 18 digits, so any value fits the column. */
    after: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,18}$', description: 'the `nextCursor` of the previous page: the transitions after it', [REASON]: 'invalid_after' }),
    ),
  }),
  { limit: TRANSITIONS_MAX },
);
export type RunTransitionsQuery = StaticDecode<typeof RunTransitionsQuery>;

export const RunTransition = Closed(
  {
    from: Type.Union([Status, Type.Null()], { description: 'null for the start' }),
    to: Status,
    revision: Type.Integer({ description: 'the run’s revision after it' }),
    workerId: Type.Union([Text, Type.Null()], { description: 'the worker that made it, if a worker did' }),
    at: Time,
  },
  { title: 'RunTransition' },
);
export type RunTransition = Static<typeof RunTransition>;

export const RunTransitions = Closed(
  {
    items: Type.Array(RunTransition, { description: 'oldest first, at most `limit` (default and most 1,000) after `after`' }),
    truncated: Type.Boolean({ description: 'the run has more transitions after this page (`nextCursor` is set)' }),
    nextCursor: Type.Union([Text, Type.Null()], { description: 'pass it back as `after` for the next page; null on the last' }),
  },
  { title: 'RunTransitions' },
);
export type RunTransitions = Static<typeof RunTransitions>;

export const FeedQuery = Closed({ runId: Type.Optional(RunId('runId')), workflow: Type.Optional(Identifier('workflow')) });
export type FeedQuery = StaticDecode<typeof FeedQuery>;

/** `event: run`: a run changed state (committed). */
export const RunChange = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    workflow: Text,
    version: Text,
    status: Status,
    revision: Type.Integer(),
    at: Time,
  },
  { title: 'RunChange' },
);
export type RunChange = Static<typeof RunChange>;

/**
 * What WorkflowClient.feed yields: `open` first, once the coordinator accepted the feed (every change committed
 * from then on comes: read the state you show after it, not before); then `run` for each transition, `progress`
 * for each progress a run reported (ctx.progress), and `resync` when changes may have been missed (the coordinator's LISTEN session reconnected): re-read what is
 * shown. (On the wire, `run`, `progress` and `resync` are events; `open` is the response itself; comments keep it alive.)
 */
export type FeedEvent = { type: 'open' } | { type: 'run'; data: RunChange } | { type: 'progress'; data: RunProgress } | { type: 'resync' };

export const FEED_DESCRIPTION =
  'Server-sent events: `event: run` with a RunChange for every transition of a matching run, in commit order per coordinator; ' +
  '`event: progress` with a RunProgress for every progress a matching run reported (ctx.progress); ' +
  '`event: resync` when changes may have been missed (re-read); a comment line every FEED_KEEPALIVE_MS.';
