import { type StaticDecode, type TSchema, Type } from '@sinclair/typebox';
import { DashboardConfig } from './dashboard-config.contracts';
import { FEED_DESCRIPTION, FeedQuery, RunTransitions, RunTransitionsQuery, Stats, StatsQuery } from './dashboard.contracts';
import { DeadLetterPage, DeadLetterPath, ListDeadLettersQuery, RedriveResult } from './dead-letter.contracts';
import {
  EventAccepted,
  ListRunsQuery,
  RunEventPath,
  RunPage,
  RunPath,
  RunResultQuery,
  RunView,
  SendEventRequest,
  StartedRuns,
  StartRunRequest,
  StartRunsBatch,
} from './run.contracts';
import { CreateScheduleRequest, ListSchedulesQuery, SchedulePage, SchedulePath, ScheduleView, TriggeredSchedule } from './schedule.contracts';
import {
  ClaimRequest,
  ClaimResponse,
  OfferPath,
  OfferRequest,
  CompleteRunRequest,
  FailRunRequest,
  HeartbeatRequest,
  HeartbeatResponse,
  ReleaseRunRequest,
  ReportsRequest,
  ReportsResponse,
  RevisionResponse,
  StartChildRequest,
  StepResponse,
  StreamDeadLetterReport,
  StreamDeadLetterResponse,
  SuspendRequest,
  TakeRunsRequest,
  TakeRunsResponse,
  TaskResultRequest,
  TaskResultResponse,
  WorkerPath,
} from './worker.contracts';
import { WorkerIdPath, WorkerList, WorkerRegistration } from './worker-registry.contracts';
import { PauseRequest, WorkflowLimits, WorkflowList, WorkflowPath, WorkflowView } from './workflow-control.contracts';

/**
 * Every route of the coordinator's HTTP API, once: the coordinator serves each from its entry (path, method,
 * status, audience, and the schemas it validates its input with), and the API description at /docs-json is
 * built from the same entries (see openApiDocument).
 */
export interface Endpoint {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI style: `/v1/runs/{id}`. */
  path: string;
  /** Whose bearer token it takes: CLIENT_TOKEN, WORKER_TOKEN, or none. */
  audience: 'client' | 'worker' | 'public';
  tag: string;
  summary: string;
  params?: TSchema;
  query?: TSchema;
  body?: TSchema;
  /** A body that may be left out (read as `{}`). */
  bodyOptional?: boolean;
  /** The status of a success, unless the handler sets another of `responses`. */
  status: number;
  responses: Record<number, { description: string; schema?: TSchema; contentType?: string }>;
  /** Refusals of this route beyond the ones every route has (400 for bad input, 401, 503). */
  errors?: Partial<Record<404 | 409, string>>;
}

/** What a route's handler gets: its path parameters, query and body, validated and decoded. */
export type EndpointInput<E extends Endpoint> = {
  params: E['params'] extends TSchema ? StaticDecode<E['params']> : undefined;
  query: E['query'] extends TSchema ? StaticDecode<E['query']> : undefined;
  body: E['body'] extends TSchema ? StaticDecode<E['body']> : undefined;
};

const endpoint = <const E extends Endpoint>(entry: E): E => entry;
const json = <S extends TSchema>(description: string, schema: S) => ({ description, schema });

const RUN_NOT_FOUND = 'run_not_found';
const SCHEDULE_NOT_FOUND = 'schedule_not_found';
const revisioned = { 404: RUN_NOT_FOUND, 409: 'revision_conflict: the run is no longer at `expectedRevision` in a running state (nothing changed)' } as const;

/** Each health indicator's state (`up`, `degraded`, `down`), with what it found. */
const Indicators = Type.Record(Type.String(), Type.Object({ status: Type.Union([Type.Literal('up'), Type.Literal('degraded'), Type.Literal('down')]) }));

/** A terminus report: `status` overall, and each indicator's state under `info` (up), `error` (not up) and `details` (all). */
const HealthReport = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('error'), Type.Literal('shutting_down')]),
    info: Type.Optional(Indicators),
    error: Type.Optional(Indicators),
    details: Indicators,
  },
  { title: 'HealthReport' },
);

export const API = {
  // ---- runs (clients) ----
  startRun: endpoint({
    method: 'post',
    path: '/v1/runs',
    audience: 'client',
    tag: 'runs',
    summary: 'Start a run',
    body: StartRunRequest,
    status: 201,
    responses: { 201: json('The new run', RunView), 200: json('The existing run: its idempotency key was used for this workflow already', RunView) },
  }),
  startRuns: endpoint({
    method: 'post',
    path: '/v1/runs/batch',
    audience: 'client',
    tag: 'runs',
    summary: 'Start up to 1,000 runs in one transaction (an existing idempotency key gives the existing run)',
    body: StartRunsBatch,
    status: 201,
    responses: { 201: json('The runs, in request order', StartedRuns) },
  }),
  listRuns: endpoint({
    method: 'get',
    path: '/v1/runs',
    audience: 'client',
    tag: 'runs',
    summary: 'List runs, newest first',
    query: ListRunsQuery,
    status: 200,
    responses: { 200: json('A page of runs', RunPage) },
  }),
  getRun: endpoint({
    method: 'get',
    path: '/v1/runs/{id}',
    audience: 'client',
    tag: 'runs',
    summary: 'A run with its steps',
    params: RunPath,
    status: 200,
    responses: { 200: json('The run', RunView) },
    errors: { 404: RUN_NOT_FOUND },
  }),
  runResult: endpoint({
    method: 'get',
    path: '/v1/runs/{id}/result',
    audience: 'client',
    tag: 'runs',
    summary: 'Wait up to waitMs for the run to be terminal (woken by its final transition), then return it as it is',
    params: RunPath,
    query: RunResultQuery,
    status: 200,
    responses: { 200: json('The run', RunView) },
    errors: { 404: RUN_NOT_FOUND },
  }),
  cancelRun: endpoint({
    method: 'post',
    path: '/v1/runs/{id}/cancel',
    audience: 'client',
    tag: 'runs',
    summary: 'Cancel the run and its unfinished child runs',
    params: RunPath,
    status: 200,
    responses: { 200: json('The cancelled run', RunView) },
    errors: { 404: RUN_NOT_FOUND, 409: 'run_terminal: the run already finished' },
  }),
  sendEvent: endpoint({
    method: 'post',
    path: '/v1/runs/{id}/events/{name}',
    audience: 'client',
    tag: 'runs',
    summary: 'Deliver an event to a run waiting for it, or keep it for its next wait of that name',
    params: RunEventPath,
    body: SendEventRequest,
    bodyOptional: true,
    status: 202,
    responses: { 202: json('Accepted', EventAccepted) },
    errors: { 404: RUN_NOT_FOUND, 409: 'run_terminal: the run already finished' },
  }),
  wakeRun: endpoint({
    method: 'post',
    path: '/v1/runs/{id}/wake',
    audience: 'client',
    tag: 'runs',
    summary: 'End a durable sleep now',
    params: RunPath,
    status: 200,
    responses: { 200: json('The run', RunView) },
    errors: { 404: RUN_NOT_FOUND, 409: 'run_not_sleeping: the run is not in a durable sleep' },
  }),
  retryRun: endpoint({
    method: 'post',
    path: '/v1/runs/{id}/retry',
    audience: 'client',
    tag: 'runs',
    summary: 'Run a failed run again as its next attempt, resuming from its completed steps',
    params: RunPath,
    status: 200,
    responses: { 200: json('The run, queued again', RunView) },
    errors: { 404: RUN_NOT_FOUND, 409: 'run_not_failed: only a failed run can be retried' },
  }),

  runTransitions: endpoint({
    method: 'get',
    path: '/v1/runs/{id}/transitions',
    audience: 'client',
    tag: 'runs',
    summary: 'The run’s state transitions, oldest first, a page at a time',
    params: RunPath,
    query: RunTransitionsQuery,
    status: 200,
    responses: { 200: json('Its transitions', RunTransitions) },
    errors: { 404: RUN_NOT_FOUND },
  }),

  // ---- operators' views (clients) ----
  stats: endpoint({
    method: 'get',
    path: '/v1/stats',
    audience: 'client',
    tag: 'operations',
    summary: 'Run counts and throughput over a window, queue depths, the outbox, dead letters and workers online',
    query: StatsQuery,
    status: 200,
    responses: { 200: json('The numbers, as of `generatedAt`', Stats) },
  }),
  feed: endpoint({
    method: 'get',
    path: '/v1/feed',
    audience: 'client',
    tag: 'operations',
    summary: 'A live feed of run changes (server-sent events), optionally of one run or one workflow',
    query: FeedQuery,
    status: 200,
    responses: { 200: { description: FEED_DESCRIPTION, schema: Type.String(), contentType: 'text/event-stream' } },
  }),

  // ---- schedules (clients) ----
  createSchedule: endpoint({
    method: 'post',
    path: '/v1/schedules',
    audience: 'client',
    tag: 'schedules',
    summary: 'Create a schedule: runs of a workflow version at the times of a cron expression (in a time zone) or every intervalMs',
    body: CreateScheduleRequest,
    status: 201,
    responses: { 201: json('The schedule', ScheduleView) },
  }),
  listSchedules: endpoint({
    method: 'get',
    path: '/v1/schedules',
    audience: 'client',
    tag: 'schedules',
    summary: 'List schedules, newest first',
    query: ListSchedulesQuery,
    status: 200,
    responses: { 200: json('A page of schedules', SchedulePage) },
  }),
  getSchedule: endpoint({
    method: 'get',
    path: '/v1/schedules/{id}',
    audience: 'client',
    tag: 'schedules',
    summary: 'A schedule',
    params: SchedulePath,
    status: 200,
    responses: { 200: json('The schedule', ScheduleView) },
    errors: { 404: SCHEDULE_NOT_FOUND },
  }),
  deleteSchedule: endpoint({
    method: 'delete',
    path: '/v1/schedules/{id}',
    audience: 'client',
    tag: 'schedules',
    summary: 'Delete a schedule (the runs it started stay)',
    params: SchedulePath,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    errors: { 404: SCHEDULE_NOT_FOUND, 409: 'schedule_in_code: the schedule is declared in code that online workers host; remove it there, or pause it' },
  }),
  pauseSchedule: endpoint({
    method: 'post',
    path: '/v1/schedules/{id}/pause',
    audience: 'client',
    tag: 'schedules',
    summary: 'Stop firing until resumed (a pause of a schedule declared in code survives its workers registering again)',
    params: SchedulePath,
    status: 200,
    responses: { 200: json('The schedule', ScheduleView) },
    errors: { 404: SCHEDULE_NOT_FOUND },
  }),
  resumeSchedule: endpoint({
    method: 'post',
    path: '/v1/schedules/{id}/resume',
    audience: 'client',
    tag: 'schedules',
    summary: 'Fire again from the next fire time after now (times that passed while paused are not caught up)',
    params: SchedulePath,
    status: 200,
    responses: { 200: json('The schedule', ScheduleView) },
    errors: { 404: SCHEDULE_NOT_FOUND },
  }),
  triggerSchedule: endpoint({
    method: 'post',
    path: '/v1/schedules/{id}/trigger',
    audience: 'client',
    tag: 'schedules',
    summary: 'Start a run of the schedule now, paused or not and whatever its overlap policy; its fire times stay as they are',
    params: SchedulePath,
    status: 201,
    responses: { 201: json('The run started, and the schedule', TriggeredSchedule) },
    errors: { 404: SCHEDULE_NOT_FOUND },
  }),

  // ---- dead letters (clients) ----
  listDeadLetters: endpoint({
    method: 'get',
    path: '/v1/dead-letters',
    audience: 'client',
    tag: 'dead letters',
    summary: 'What dispatch gave up on, newest first',
    query: ListDeadLettersQuery,
    status: 200,
    responses: { 200: json('A page of dead letters', DeadLetterPage) },
  }),
  redriveDeadLetter: endpoint({
    method: 'post',
    path: '/v1/dead-letters/{id}/redrive',
    audience: 'client',
    tag: 'dead letters',
    summary: 'Put its run back in motion (a new attempt, or a new wake-up) and remove it',
    params: DeadLetterPath,
    status: 200,
    responses: { 200: json('What the redrive did', RedriveResult) },
    errors: { 404: 'dead_letter_not_found' },
  }),
  deleteDeadLetter: endpoint({
    method: 'delete',
    path: '/v1/dead-letters/{id}',
    audience: 'client',
    tag: 'dead letters',
    summary: 'Remove it',
    params: DeadLetterPath,
    status: 204,
    responses: { 204: { description: 'Removed' } },
    errors: { 404: 'dead_letter_not_found' },
  }),

  // ---- workers (clients) ----
  listWorkers: endpoint({
    method: 'get',
    path: '/v1/workers',
    audience: 'client',
    tag: 'workers',
    summary: 'The worker registry: every worker seen in the last hour, whether it is online, and what it hosts',
    status: 200,
    responses: { 200: json('The workers, online ones first', WorkerList) },
  }),

  // ---- workflow versions: pause, resume, limits (clients) ----
  listWorkflows: endpoint({
    method: 'get',
    path: '/v1/workflows',
    audience: 'client',
    tag: 'workflows',
    summary: 'The workflow versions known (registered by workers, or with controls set), with their pauses and limits',
    status: 200,
    responses: { 200: json('The workflow versions, by name and version', WorkflowList) },
  }),
  pauseWorkflow: endpoint({
    method: 'post',
    path: '/v1/workflows/{name}/{version}/pause',
    audience: 'client',
    tag: 'workflows',
    summary: 'Pause the version (or with `shard` one shard of it): its queued runs are not taken in any mode; running ones finish; starts are still accepted',
    params: WorkflowPath,
    body: PauseRequest,
    bodyOptional: true,
    status: 200,
    responses: { 200: json('The version', WorkflowView) },
  }),
  resumeWorkflow: endpoint({
    method: 'post',
    path: '/v1/workflows/{name}/{version}/resume',
    audience: 'client',
    tag: 'workflows',
    summary: 'Resume the version (all its shards), or with `shard` that shard; its waiting runs are woken',
    params: WorkflowPath,
    body: PauseRequest,
    bodyOptional: true,
    status: 200,
    responses: { 200: json('The version', WorkflowView) },
  }),
  setWorkflowLimits: endpoint({
    method: 'put',
    path: '/v1/workflows/{name}/{version}/limits',
    audience: 'client',
    tag: 'workflows',
    summary:
      "Set the version's limits through the API (replacing those set before); each one set wins over the code's until cleared (null or absent: the code's applies)",
    params: WorkflowPath,
    body: WorkflowLimits,
    status: 200,
    responses: { 200: json('The version', WorkflowView) },
  }),
  clearWorkflowLimits: endpoint({
    method: 'delete',
    path: '/v1/workflows/{name}/{version}/limits',
    audience: 'client',
    tag: 'workflows',
    summary: "Clear the limits set through the API: the code's apply again",
    params: WorkflowPath,
    status: 200,
    responses: { 200: json('The version', WorkflowView) },
  }),

  // ---- worker protocol ----
  registerWorker: endpoint({
    method: 'put',
    path: '/v1/worker/workers/{workerId}',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Say what this worker is and hosts; sent at start and then every intervalMs',
    params: WorkerIdPath,
    body: WorkerRegistration,
    status: 204,
    responses: { 204: { description: 'Registered' } },
  }),
  claimRuns: endpoint({
    method: 'post',
    path: '/v1/worker/claims',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Claim ready runs of the given workflow versions, long-polling up to waitMs when none is ready',
    body: ClaimRequest,
    status: 200,
    responses: { 200: json('The runs claimed (none when waitMs passed)', ClaimResponse) },
  }),
  offerRuns: endpoint({
    method: 'post',
    path: '/v1/worker/offers',
    audience: 'worker',
    tag: 'worker protocol',
    summary:
      'Offer an idle worker (of a Redis subscriber) to the runs started on this coordinator, up to waitMs: a start may hand it its run in its own commit. Claims nothing otherwise',
    body: OfferRequest,
    status: 200,
    responses: { 200: json('The run handed over (none when waitMs passed or the offer was withdrawn)', ClaimResponse) },
    errors: { 409: 'offer_exists: an offer with this id waits here already' },
  }),
  withdrawOffer: endpoint({
    method: 'delete',
    path: '/v1/worker/offers/{offerId}',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Withdraw an offer: its own request then answers at once, with the run a start handed it before, if any',
    params: OfferPath,
    status: 204,
    responses: { 204: { description: 'Withdrawn' } },
    errors: { 404: 'offer_not_found: no such offer waits here (it answered already, or was made to another coordinator)' },
  }),
  takeRuns: endpoint({
    method: 'post',
    path: '/v1/worker/takes',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Take runs for wake-ups a transport (Redis) delivered: up to one per wake-up of each queue, chosen as a claim chooses them',
    body: TakeRunsRequest,
    status: 200,
    responses: { 200: json('The runs taken, and the wake-ups to give back', TakeRunsResponse) },
  }),
  heartbeat: endpoint({
    method: 'post',
    path: '/v1/worker/heartbeats',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Refresh the claims of runs this worker holds',
    body: HeartbeatRequest,
    status: 200,
    responses: { 200: json('The runs no longer held', HeartbeatResponse) },
  }),
  recordTask: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/tasks',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Record a task result (the first one written for a key wins)',
    params: WorkerPath,
    body: TaskResultRequest,
    status: 200,
    responses: { 200: json('The recorded task', TaskResultResponse) },
    errors: revisioned,
  }),
  report: endpoint({
    method: 'post',
    path: '/v1/worker/reports',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Task results, completions and failures of several runs in one request and one transaction, each checked on its own',
    body: ReportsRequest,
    status: 200,
    responses: { 200: json('One outcome per report, in order', ReportsResponse) },
  }),
  completeRun: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/complete',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Complete the run',
    params: WorkerPath,
    body: CompleteRunRequest,
    status: 200,
    responses: { 200: json('Completed', RevisionResponse) },
    errors: revisioned,
  }),
  failRun: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/fail',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Fail the run, or with retryDelayMs schedule its next attempt',
    params: WorkerPath,
    body: FailRunRequest,
    status: 200,
    responses: { 200: json('Failed, or waiting for its next attempt', RevisionResponse) },
    errors: revisioned,
  }),
  suspendRun: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/suspend',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Suspend the run at a sleep, event or retry-wait step (or resolve the step at once)',
    params: WorkerPath,
    body: SuspendRequest,
    status: 200,
    responses: { 200: json('The step', StepResponse) },
    errors: { ...revisioned, 409: `${revisioned[409]}; step_conflict: the key was recorded as another kind of step` },
  }),
  startChild: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/children',
    audience: 'worker',
    tag: 'worker protocol',
    summary: "Start a child run (in the parent's shard unless `shard` names one, null: none); with `wait` the parent suspends until it is terminal",
    params: WorkerPath,
    body: StartChildRequest,
    status: 200,
    responses: { 200: json('The step', StepResponse) },
    errors: { ...revisioned, 409: `${revisioned[409]}; step_conflict: the key was recorded as another kind of step` },
  }),
  releaseRun: endpoint({
    method: 'post',
    path: '/v1/worker/runs/{id}/release',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Give the run back (worker shutting down), so another worker takes it at once',
    params: WorkerPath,
    body: ReleaseRunRequest,
    status: 200,
    responses: { 200: json('Queued again', RevisionResponse) },
    errors: revisioned,
  }),
  reportDeadLetter: endpoint({
    method: 'post',
    path: '/v1/worker/dead-letters',
    audience: 'worker',
    tag: 'worker protocol',
    summary: 'Hand over a Streams wake-up delivered too often: recorded, and its run failed (`stalled`) if its claim went idle',
    body: StreamDeadLetterReport,
    status: 200,
    responses: { 200: json('The dead letter', StreamDeadLetterResponse) },
  }),

  // ---- operations (no token) ----
  live: endpoint({
    method: 'get',
    path: '/health/live',
    audience: 'public',
    tag: 'operations',
    summary: 'Liveness: the process serves HTTP',
    status: 200,
    responses: { 200: json('Up', HealthReport) },
  }),
  ready: endpoint({
    method: 'get',
    path: '/health/ready',
    audience: 'public',
    tag: 'operations',
    summary: 'Readiness: PostgreSQL, the LISTEN session, and with a publisher Redis and the outbox',
    status: 200,
    responses: { 200: json('Up, or `degraded` when the outbox falls behind or dead letters pile up', HealthReport), 503: json('Down', HealthReport) },
  }),
  metrics: endpoint({
    method: 'get',
    path: '/metrics',
    audience: 'public',
    tag: 'operations',
    summary: 'Prometheus metrics',
    status: 200,
    responses: { 200: { description: 'Prometheus text format', schema: Type.String(), contentType: 'text/plain' } },
  }),
  dashboardConfig: endpoint({
    method: 'get',
    path: '/ui/config.json',
    audience: 'public',
    tag: 'operations',
    summary: "The web dashboard's settings (its pages are served under /ui without a token; the API calls they make take one)",
    status: 200,
    responses: { 200: json('Whether API calls need the client token', DashboardConfig) },
  }),
} satisfies Record<string, Endpoint>;
