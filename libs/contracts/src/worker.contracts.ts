import { ErrorDetails, parseErrorDetails, parseWaitMs } from './run.contracts';
import type { TaskStatus } from './run-status';
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
}

export interface ClaimRequest {
  workerId: string;
  workflows: WorkflowRef[];
  limit: number;
  waitMs: number;
}

/** A stored task result, handed back to the worker so a re-executed run replays it. */
export interface StoredTask {
  key: string;
  status: TaskStatus;
  attempts: number;
  output: JsonValue;
  error: ErrorDetails | null;
}

export interface ClaimedRun {
  id: string;
  workflow: string;
  version: string;
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
  name: string;
  status: TaskStatus;
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
}

function parseRevision(value: unknown): number {
  return parseInteger(value, 'expectedRevision', 0, REVISION_MAX);
}

export function parseClaimRequest(raw: unknown): ClaimRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['workerId', 'workflows', 'limit', 'waitMs'], 'request body');
  if (!Array.isArray(body.workflows) || body.workflows.length === 0 || body.workflows.length > 1000) {
    fail('invalid_workflows', 'workflows must be a non-empty array of {name, version}');
  }
  const workflows = body.workflows.map((item: unknown) => {
    const ref = requireObject(item, 'workflows[]');
    rejectUnknownFields(ref, ['name', 'version'], 'workflows[]');
    return { name: parseIdentifier(ref.name, 'workflow'), version: parseIdentifier(ref.version, 'version') };
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
  if (!Array.isArray(body.runs) || body.runs.length > 10_000) {
    fail('invalid_runs', 'runs must be an array of {id, expectedRevision}');
  }
  return {
    workerId: parseKey(body.workerId, 'workerId'),
    runs: body.runs.map((item: unknown) => {
      const run = requireObject(item, 'runs[]');
      rejectUnknownFields(run, ['id', 'expectedRevision'], 'runs[]');
      return { id: parseRunId(run.id, 'id'), expectedRevision: parseRevision(run.expectedRevision) };
    }),
  };
}

export function parseTaskResultRequest(raw: unknown): TaskResultRequest {
  const body = requireObject(raw, 'request body');
  rejectUnknownFields(body, ['expectedRevision', 'key', 'name', 'status', 'attempts', 'output', 'error'], 'request body');
  if (!TASK_STATUSES.includes(body.status as TaskStatus)) {
    fail('invalid_status', `status must be one of ${TASK_STATUSES.join(', ')}`);
  }
  const status = body.status as TaskStatus;
  if (status === 'failed' && body.error === undefined) fail('invalid_error', 'a failed task needs an error');
  return {
    expectedRevision: parseRevision(body.expectedRevision),
    key: parseKey(body.key, 'key'),
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
  rejectUnknownFields(body, ['expectedRevision', 'error'], 'request body');
  return { expectedRevision: parseRevision(body.expectedRevision), error: parseErrorDetails(body.error, 'error') };
}
