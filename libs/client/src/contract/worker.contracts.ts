import { ErrorDetails, parseErrorDetails, parseWaitMs } from './run.contracts';
import type { StepKind, TaskOutcome, TaskStatus } from './run-status';
import { TASK_STATUSES } from './run-status';
import {
  fail,
  JsonValue,
  parseIdentifier,
  parseInteger,
  parseJson,
  parseKey,
  parseRunId,
  rejectUnknownFields,
  requireArray,
  requireObject,
} from './validation';

/**
 * The worker protocol (worker <-> coordinator). Every write carries the revision the worker
 * received with its claim; the coordinator applies it only if the run is still running at that
 * revision (see libs/locking).
 */

export const REVISION_MAX = 2_147_483_647;
export const CLAIM_LIMIT_MAX = 500;

export interface WorkflowRef {
  name: string;
  version: string;
  /** Serve only runs started with this routing shard (default: runs without one). */
  shard?: string;
}

export interface ClaimRequest {
  workerId: string;
  workflows: WorkflowRef[];
  limit: number;
  waitMs: number;
}

/**
 * A recorded step (a task result or a resolved suspension), handed back to the worker so a
 * re-executed run replays it.
 */
export interface StoredTask {
  key: string;
  kind: StepKind;
  /** Position in the workflow's call order. */
  seq: number;
  status: TaskStatus;
  attempts: number;
  output: JsonValue;
  error: ErrorDetails | null;
}

export interface ClaimedRun {
  id: string;
  workflow: string;
  version: string;
  /** Where it waited: `<workflow>:<version>[:<shard>]` (see queueName in libs/streams). */
  queue: string;
  /** For a take: the wake-up (as the worker named it) this run was taken with. */
  wakeup?: string;
  revision: number;
  attempt: number;
  input: JsonValue;
  tasks: StoredTask[];
}

export interface ClaimResponse {
  runs: ClaimedRun[];
}

export interface HeartbeatRequest {
  workerId: string;
  runs: { id: string; expectedRevision: number }[];
}

export interface HeartbeatResponse {
  /** Runs this worker no longer owns: it must stop them and write nothing more. */
  lost: string[];
}

export interface TaskResultRequest {
  expectedRevision: number;
  key: string;
  seq: number;
  name: string;
  status: TaskOutcome;
  attempts: number;
  output: JsonValue;
  error: ErrorDetails | null;
}

export interface TaskResultResponse {
  /** The recorded result: the first one written for this key wins, later writers adopt it. */
  task: StoredTask;
}

export interface CompleteRunRequest {
  expectedRevision: number;
  output: JsonValue;
}

export interface FailRunRequest {
  expectedRevision: number;
  error: ErrorDetails;
  /** Retry the whole run (attempt + 1) after this delay instead of failing it. */
  retryDelayMs?: number;
}

export interface ReleaseRunRequest {
  expectedRevision: number;
}

/** Longest durable wait: 100 years. */
export const MAX_DELAY_MS = 100 * 365 * 24 * 3600 * 1000;

/**
 * Suspends the run at a step until it is due again (the run's worker slot is freed):
 * `sleep` for `delayMs`; `event` until an event called `name` arrives (or `delayMs` passes);
 * `retry` of task `name` after `delayMs` (with `attempts` made so far).
 */
export interface SuspendRequest {
  expectedRevision: number;
  key: string;
  seq: number;
  kind: 'sleep' | 'event' | 'retry';
  name: string;
  /** null: no timeout (events only). */
  delayMs: number | null;
  attempts: number;
}

/** Starts a child run; with `wait`, the parent suspends until the child is terminal (or `timeoutMs` passes). */
export interface StartChildRequest {
  expectedRevision: number;
  key: string;
  seq: number;
  name: string;
  workflow: string;
  version: string;
  input: JsonValue;
  wait: boolean;
  timeoutMs: number | null;
  /** Routing shard of the child. Absent: the parent's shard; null: no shard. */
  shard?: string | null;
}

/** `suspended: false` means the step resolved at once (event already sent, child already done, zero delay). */
export interface StepResponse {
  suspended: boolean;
  task: StoredTask;
}

function parseWorkflowRef(ref: Record<string, unknown>): WorkflowRef {
  const parsed: WorkflowRef = { name: parseIdentifier(ref.name, 'workflow'), version: parseIdentifier(ref.version, 'version') };
  if (ref.shard !== undefined) parsed.shard = parseIdentifier(ref.shard, 'shard');
  return parsed;
}

function parseRevision(value: unknown): number {
  return parseInteger(value, 'expectedRevision', 0, REVISION_MAX);
}

export function parseClaimRequest(raw: unknown): ClaimRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workerId', 'workflows', 'limit', 'waitMs'], 'request body');
  const workflows = requireArray(body.workflows, 'workflows', 1000).map((item: unknown) => {
    const ref = requireObject(item, 'workflows[]');
    rejectUnknownFields(ref, ['name', 'version', 'shard'], 'workflows[]');
    return parseWorkflowRef(ref);
  });
  return {
    workerId: parseKey(body.workerId, 'workerId'),
    workflows,
    limit: parseInteger(body.limit, 'limit', 1, CLAIM_LIMIT_MAX),
    waitMs: parseWaitMs(body.waitMs),
  };
}

export function parseHeartbeatRequest(raw: unknown): HeartbeatRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workerId', 'runs'], 'request body');
  return {
    workerId: parseKey(body.workerId, 'workerId'),
    runs: requireArray(body.runs, 'runs', 10_000, 0).map((item: unknown) => {
      const run = requireObject(item, 'runs[]');
      rejectUnknownFields(run, ['id', 'expectedRevision'], 'runs[]');
      return { id: parseRunId(run.id, 'id'), expectedRevision: parseRevision(run.expectedRevision) };
    }),
  };
}

export function parseTaskResultRequest(raw: unknown): TaskResultRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision', 'key', 'seq', 'name', 'status', 'attempts', 'output', 'error'], 'request body');
  if (!TASK_STATUSES.includes(body.status as TaskOutcome)) {
    fail('invalid_status', `status must be one of ${TASK_STATUSES.join(', ')}`);
  }
  const status = body.status as TaskOutcome;
  if (status === 'failed' && body.error === undefined) fail('invalid_error', 'a failed task needs an error');
  return {
    expectedRevision: parseRevision(body.expectedRevision),
    key: parseKey(body.key, 'key'),
    seq: parseSeq(body.seq),
    name: parseKey(body.name, 'name'),
    status,
    attempts: parseInteger(body.attempts, 'attempts', 1, 1_000_000),
    output: status === 'completed' ? parseJson(body.output, 'output') : null,
    error: status === 'failed' ? parseErrorDetails(body.error, 'error') : null,
  };
}

export function parseCompleteRunRequest(raw: unknown): CompleteRunRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision', 'output'], 'request body');
  return { expectedRevision: parseRevision(body.expectedRevision), output: parseJson(body.output, 'output') };
}

export function parseFailRunRequest(raw: unknown): FailRunRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision', 'error', 'retryDelayMs'], 'request body');
  return {
    expectedRevision: parseRevision(body.expectedRevision),
    error: parseErrorDetails(body.error, 'error'),
    retryDelayMs: body.retryDelayMs === undefined ? undefined : parseInteger(body.retryDelayMs, 'retryDelayMs', 0, MAX_DELAY_MS),
  };
}

export function parseReleaseRunRequest(raw: unknown): ReleaseRunRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision'], 'request body');
  return { expectedRevision: parseRevision(body.expectedRevision) };
}

function parseSeq(value: unknown): number {
  return parseInteger(value, 'seq', 0, 1_000_000);
}

function parseDelay(value: unknown, field: string, nullable: boolean): number | null {
  if (nullable && (value === null || value === undefined)) return null;
  return parseInteger(value, field, 0, MAX_DELAY_MS);
}

export function parseSuspendRequest(raw: unknown): SuspendRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision', 'key', 'seq', 'kind', 'name', 'delayMs', 'attempts'], 'request body');
  if (body.kind !== 'sleep' && body.kind !== 'event' && body.kind !== 'retry') {
    fail('invalid_kind', 'kind must be one of sleep, event, retry');
  }
  const kind = body.kind;
  return {
    expectedRevision: parseRevision(body.expectedRevision),
    key: parseKey(body.key, 'key'),
    seq: parseSeq(body.seq),
    kind,
    name: kind === 'event' ? parseIdentifier(body.name, 'name') : parseKey(body.name, 'name'),
    delayMs: parseDelay(body.delayMs, 'delayMs', kind === 'event'),
    attempts: body.attempts === undefined ? 0 : parseInteger(body.attempts, 'attempts', 0, 1_000_000),
  };
}

export function parseStartChildRequest(raw: unknown): StartChildRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(
    body,
    ['expectedRevision', 'key', 'seq', 'name', 'workflow', 'version', 'input', 'wait', 'timeoutMs', 'shard'],
    'request body',
  );
  if (typeof body.wait !== 'boolean') fail('invalid_wait', 'wait must be a boolean');
  return {
    expectedRevision: parseRevision(body.expectedRevision),
    key: parseKey(body.key, 'key'),
    seq: parseSeq(body.seq),
    name: parseKey(body.name, 'name'),
    workflow: parseIdentifier(body.workflow, 'workflow'),
    version: parseIdentifier(body.version, 'version'),
    input: parseJson(body.input, 'input'),
    wait: body.wait,
    timeoutMs: parseDelay(body.timeoutMs, 'timeoutMs', true),
    shard: body.shard === undefined ? undefined : body.shard === null ? null : parseIdentifier(body.shard, 'shard'),
  };
}

/**
 * Wake-ups a transport (Redis) delivered, per queue: the worker holds these for that workflow version
 * (and shard) and has a free slot for each. Each is named by the worker (a stream entry, a set member;
 * unique within its queue, and stable: a dead letter names it the same way). The coordinator takes the queue's best runs for them, as a claim would (work
 * stealing first, then priority, then due time), so every limit is decided in PostgreSQL whatever the
 * transport.
 */
export interface TakeRunsRequest {
  workerId: string;
  workflows: (WorkflowRef & { wakeups: string[] })[];
}

export interface TakeRunsResponse {
  /** At most one run per wake-up of each queue, each with the wake-up it was taken with. */
  runs: ClaimedRun[];
  /**
   * Wake-ups that took nothing although their queue still has runs waiting (taken elsewhere at that
   * very moment, or locked): give them back to the transport. Every other unused wake-up is done with.
   */
  requeue: { queue: string; wakeup: string }[];
}

export function parseTakeRunsRequest(raw: unknown): TakeRunsRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workerId', 'workflows'], 'request body');
  const workflows = requireArray(body.workflows, 'workflows', 1000).map((item: unknown) => {
    const ref = requireObject(item, 'workflows[]');
    rejectUnknownFields(ref, ['name', 'version', 'shard', 'wakeups'], 'workflows[]');
    const wakeups = requireArray(ref.wakeups, 'wakeups', CLAIM_LIMIT_MAX).map((wakeup) => parseKey(wakeup, 'wakeups'));
    return { ...parseWorkflowRef(ref), wakeups };
  });
  const total = workflows.reduce((sum, ref) => sum + ref.wakeups.length, 0);
  if (total > CLAIM_LIMIT_MAX) fail('invalid_wakeups', `${total} wake-ups; at most ${CLAIM_LIMIT_MAX} runs are taken at once`);
  for (const ref of workflows) {
    if (new Set(ref.wakeups).size !== ref.wakeups.length) fail('invalid_wakeups', 'each wake-up of a workflow may be named once');
  }
  return { workerId: parseKey(body.workerId, 'workerId'), workflows };
}

/**
 * A Streams message delivered more than MAX_DELIVERIES times (its workers kept dying or hanging):
 * the worker hands it to the coordinator, which records it as a dead letter and fails its run as
 * `stalled` if that run is still held by a claim that went idle.
 */
export interface StreamDeadLetterReport {
  workerId: string;
  /** The queue it woke. */
  workflow: WorkflowRef;
  /** How the worker names it in takes (its partition and entry id). */
  wakeup: string;
  /** The run whose becoming ready published it, if it names one. */
  runId?: string;
  deliveries: number;
}

export interface StreamDeadLetterResponse {
  deadLetterId: string;
  /** True when the run was failed (`stalled`) because of it. */
  runFailed: boolean;
}

export function parseStreamDeadLetterReport(raw: unknown): StreamDeadLetterReport {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workerId', 'workflow', 'wakeup', 'runId', 'deliveries'], 'request body');
  const workflow = requireObject(body.workflow, 'workflow');
  rejectUnknownFields(workflow, ['name', 'version', 'shard'], 'workflow');
  const report: StreamDeadLetterReport = {
    workerId: parseKey(body.workerId, 'workerId'),
    workflow: parseWorkflowRef(workflow),
    wakeup: parseKey(body.wakeup, 'wakeup'),
    deliveries: parseInteger(body.deliveries, 'deliveries', 1, 1_000_000_000),
  };
  if (body.runId !== undefined) report.runId = parseRunId(body.runId, 'runId');
  return report;
}

/**
 * Several writes of one worker in one request and one transaction (`POST /v1/worker/reports`): the
 * worker coalesces the task results and outcomes of its concurrent runs, so a busy worker pays one
 * round trip and one commit for many of them. Each report is checked on its own.
 */
export type WorkerReport =
  | { type: 'task'; runId: string; task: TaskResultRequest }
  | { type: 'complete'; runId: string; complete: CompleteRunRequest }
  | { type: 'fail'; runId: string; fail: FailRunRequest };

export type ReportOutcome = { ok: true; result: unknown } | { ok: false; statusCode: number; reason: string; message: string };

export interface ReportsResponse {
  /** One per report, in order. */
  outcomes: ReportOutcome[];
}

export const REPORTS_MAX = 500;

export function parseReportsRequest(raw: unknown): WorkerReport[] {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['reports'], 'request body');
  return requireArray(body.reports, 'reports', REPORTS_MAX).map((item: unknown): WorkerReport => {
    const report = requireObject(item, 'reports[]');
    const runId = parseRunId(report.runId, 'runId');
    switch (report.type) {
      case 'task':
        rejectUnknownFields(report, ['type', 'runId', 'task'], 'reports[]');
        return { type: 'task', runId, task: parseTaskResultRequest(report.task) };
      case 'complete':
        rejectUnknownFields(report, ['type', 'runId', 'complete'], 'reports[]');
        return { type: 'complete', runId, complete: parseCompleteRunRequest(report.complete) };
      case 'fail':
        rejectUnknownFields(report, ['type', 'runId', 'fail'], 'reports[]');
        return { type: 'fail', runId, fail: parseFailRunRequest(report.fail) };
      default:
        return fail('invalid_type', 'reports[].type must be one of task, complete, fail');
    }
  });
}
