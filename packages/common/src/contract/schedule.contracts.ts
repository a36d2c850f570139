import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { AnyJson, Closed, Flag, Identifier, IntegerIn, REASON, RunId, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { PRIORITY_MAX, PRIORITY_MIN, RunView } from './run.contracts';

/** Schedules: start a run of a workflow version at the times a cron expression or an interval gives. */

export const SCHEDULE_OVERLAPS = ['skip', 'allow', 'cancel-previous'] as const;
export type ScheduleOverlap = (typeof SCHEDULE_OVERLAPS)[number];
export const SCHEDULE_CATCH_UPS = ['none', 'latest', 'all'] as const;
export type ScheduleCatchUp = (typeof SCHEDULE_CATCH_UPS)[number];

// Spelled out rather than OneOf(…): a union over a list (not a tuple) has no static type to default.
const Overlap = Type.Union([Type.Literal('skip'), Type.Literal('allow'), Type.Literal('cancel-previous')], {
  description: `one of ${SCHEDULE_OVERLAPS.join(', ')}`,
  [REASON]: 'invalid_overlap',
});
const CatchUp = Type.Union([Type.Literal('none'), Type.Literal('latest'), Type.Literal('all')], {
  description: `one of ${SCHEDULE_CATCH_UPS.join(', ')}`,
  [REASON]: 'invalid_catchUp',
});

export const SCHEDULE_INTERVAL_MIN_MS = 100;
export const SCHEDULE_INTERVAL_MAX_MS = 366 * 24 * 3_600_000;

/** Parsed by the coordinator with the `cron` package: 5 fields, or 6 with seconds first. */
const Cron = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'a cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first',
  [REASON]: 'invalid_cron',
});
const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'an IANA time zone, e.g. Europe/Berlin (default UTC)', [REASON]: 'invalid_timezone' });

/**
 * When and what a schedule starts: exactly one of `cron` and `intervalMs` (checked by the coordinator,
 * with the cron expression and the time zone). The same fields in the API and in code.
 */
const scheduleSpec = {
  cron: Type.Optional(Cron),
  intervalMs: Type.Optional(IntegerIn('intervalMs', SCHEDULE_INTERVAL_MIN_MS, SCHEDULE_INTERVAL_MAX_MS)),
  timezone: Type.Optional(TimeZone),
  input: Type.Optional(JsonDocument('input')),
  /** Routing shard of the runs it starts. */
  shard: Type.Optional(Identifier('shard')),
  priority: Type.Optional(IntegerIn('priority', PRIORITY_MIN, PRIORITY_MAX)),
  /** While its previous run is unfinished: start no new one (skip), start one anyway (allow), or cancel the previous one. */
  overlap: Type.Optional(Overlap),
  /** Fire times that passed while no coordinator could act on them (all were down): run none of them, only the latest, or all. */
  catchUp: Type.Optional(CatchUp),
  paused: Type.Optional(Flag('paused')),
};
const SPEC_DEFAULTS = { input: null, priority: 0, overlap: 'skip', catchUp: 'latest', paused: false } as const;

export const CreateScheduleRequest = withDefaults(
  Closed({ workflow: Identifier('workflow'), version: Identifier('version'), ...scheduleSpec }, { title: 'CreateScheduleRequest' }),
  SPEC_DEFAULTS,
);
export type CreateScheduleRequest = StaticDecode<typeof CreateScheduleRequest>;

/** A schedule declared in code with its workflow (`defineWorkflow({ schedules })`), named uniquely within its version. */
export const DeclaredSchedule = withDefaults(Closed({ name: Identifier('schedule_name'), ...scheduleSpec }, { title: 'DeclaredSchedule' }), SPEC_DEFAULTS);
export type DeclaredSchedule = StaticDecode<typeof DeclaredSchedule>;

const Time = Type.String({ format: 'date-time' });

export const ScheduleView = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    workflow: Type.String(),
    version: Type.String(),
    name: Type.Union([Type.String(), Type.Null()], { description: 'its name in code when declared with the workflow; null when created through the API' }),
    cron: Type.Union([Type.String(), Type.Null()]),
    intervalMs: Type.Union([Type.Integer(), Type.Null()]),
    timezone: Type.String(),
    input: AnyJson(),
    shard: Type.Union([Type.String(), Type.Null()]),
    priority: Type.Integer(),
    overlap: Overlap,
    catchUp: CatchUp,
    paused: Type.Boolean(),
    nextRunAt: Type.Union([Time, Type.Null()], { description: 'its next fire time; null while paused' }),
    lastFiredAt: Type.Union([Time, Type.Null()], { description: 'the fire time it last acted on' }),
    lastRunId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'the run it started last (overlap is judged by it)' }),
    createdAt: Time,
    updatedAt: Time,
  },
  { title: 'ScheduleView' },
);
export type ScheduleView = Static<typeof ScheduleView>;

export const SchedulePage = Closed(
  { schedules: Type.Array(ScheduleView), nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'pass it back as `cursor` for the next page' }) },
  { title: 'SchedulePage' },
);
export type SchedulePage = Static<typeof SchedulePage>;

export const ListSchedulesQuery = withDefaults(
  Closed({
    workflow: Type.Optional(Identifier('workflow')),
    limit: Type.Optional(IntegerIn('limit', 1, 500)),
    cursor: Type.Optional(RunId('cursor')),
  }),
  { limit: 50 },
);
export type ListSchedulesQuery = StaticDecode<typeof ListSchedulesQuery>;

export const SchedulePath = Type.Object({ id: RunId('schedule_id') });

/** `POST /v1/schedules/:id/trigger`: the run started now, and the schedule as it is after it. */
export const TriggeredSchedule = Closed({ schedule: ScheduleView, run: RunView }, { title: 'TriggeredSchedule' });
export type TriggeredSchedule = Static<typeof TriggeredSchedule>;
