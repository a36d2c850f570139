import type { RunStatus, StepKind, TaskStatus } from './run-status';
import {
  fail,
  JsonValue,
  parseIdentifier,
  parseInteger,
  parseJson,
  parseKey,
  parseTimestamp,
  rejectUnknownFields,
  requireArray,
  requireObject,
} from './validation';

/** Failure details stored for a failed task or run. */
export interface ErrorDetails {
  name: string;
  message: string;
  stack?: string;
  /** Set when the engine itself failed the run, e.g. `stalled` (see RUN_FAILURE_REASONS). */
  reason?: string;
}

export interface TaskView {
  key: string;
  kind: StepKind;
  name: string;
  status: TaskStatus;
  attempts: number;
  output: JsonValue;
  error: ErrorDetails | null;
  createdAt: string;
}

export interface RunView {
  id: string;
  workflow: string;
  version: string;
  status: RunStatus;
  revision: number;
  attempt: number;
  priority: number;
  /** Times the run was taken over after its worker stopped heartbeating. */
  stalls: number;
  input: JsonValue;
  output: JsonValue;
  error: ErrorDetails | null;
  idempotencyKey: string | null;
  /** Routing shard (null: none). */
  shard: string | null;
  parentId: string | null;
  /** When the run is (or was) due; null while it waits for an event or a child without a timeout. */
  runAt: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  tasks?: TaskView[];
}

export interface RunPage {
  runs: RunView[];
  nextCursor: string | null;
}

export const PRIORITY_MIN = -1000;
export const PRIORITY_MAX = 1000;

export interface StartRunRequest {
  workflow: string;
  version: string;
  input: JsonValue;
  idempotencyKey?: string;
  /** Routing shard (e.g. a region): only workers serving that shard take the run. */
  shard?: string;
  /** Higher runs first among runs that are due. Default 0. */
  priority: number;
  runAt?: Date;
}

export function parseStartRunRequest(raw: unknown): StartRunRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workflow', 'version', 'input', 'idempotencyKey', 'shard', 'priority', 'runAt'], 'request body');
  return {
    workflow: parseIdentifier(body.workflow, 'workflow'),
    version: parseIdentifier(body.version, 'version'),
    input: parseJson(body.input, 'input'),
    idempotencyKey: body.idempotencyKey === undefined ? undefined : parseKey(body.idempotencyKey, 'idempotencyKey'),
    shard: body.shard === undefined ? undefined : parseIdentifier(body.shard, 'shard'),
    priority: body.priority === undefined ? 0 : parseInteger(body.priority, 'priority', PRIORITY_MIN, PRIORITY_MAX),
    runAt: body.runAt === undefined ? undefined : parseTimestamp(body.runAt, 'runAt'),
  };
}

export const BATCH_MAX = 1_000;

/** `POST /v1/runs/batch`: up to BATCH_MAX runs in one transaction. */
export function parseStartRunsBatch(raw: unknown): StartRunRequest[] {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['runs'], 'request body');
  return requireArray(body.runs, 'runs', BATCH_MAX).map(parseStartRunRequest);
}

export const LIST_LIMIT_MAX = 500;

export interface ListRunsQuery {
  workflow?: string;
  status?: RunStatus;
  limit: number;
  cursor?: string;
}

export function parseListRunsQuery(raw: Record<string, unknown>, statuses: readonly RunStatus[]): ListRunsQuery {
  rejectUnknownFields(raw, ['workflow', 'status', 'limit', 'cursor'], 'query');
  if (raw.status !== undefined && !statuses.includes(raw.status as RunStatus)) {
    fail('invalid_status', `status must be one of ${statuses.join(', ')}`);
  }
  return {
    workflow: raw.workflow === undefined ? undefined : parseIdentifier(raw.workflow, 'workflow'),
    status: raw.status as RunStatus | undefined,
    limit: raw.limit === undefined ? 50 : parseInteger(raw.limit, 'limit', 1, LIST_LIMIT_MAX),
    cursor: raw.cursor === undefined ? undefined : parseKey(raw.cursor, 'cursor'),
  };
}

export const WAIT_MS_MAX = 60_000;

export function parseWaitMs(raw: unknown): number {
  return raw === undefined ? 0 : parseInteger(raw, 'waitMs', 0, WAIT_MS_MAX);
}

export interface SendEventRequest {
  data: JsonValue;
}

export function parseSendEventRequest(raw: unknown): SendEventRequest {
  const body = raw === undefined ? {} : requireObject(raw, 'request body');
  rejectUnknownFields(body, ['data'], 'request body');
  return { data: parseJson(body.data, 'data') };
}

export interface EventAccepted {
  /** True when the run was waiting for this event and has been woken; false when it is kept for a later wait. */
  delivered: boolean;
}

export function parseErrorDetails(raw: unknown, field: string): ErrorDetails {
  const error = requireObject(raw, field);
  rejectUnknownFields(error, ['name', 'message', 'stack'], field);
  if (typeof error.message !== 'string') fail(`invalid_${field}`, `${field}.message must be a string`);
  const details = parseJson(
    { name: typeof error.name === 'string' ? error.name : 'Error', message: error.message, stack: error.stack },
    field,
  ) as unknown as ErrorDetails;
  if (details.stack !== undefined && typeof details.stack !== 'string') {
    fail(`invalid_${field}`, `${field}.stack must be a string`);
  }
  return details;
}
