import type { ErrorDetails } from '../contract';
import { DurableError } from './durable.error';

export interface WorkflowErrorOptions {
  /**
   * Trying again cannot help (a declined card, input that can never be processed): thrown from a task,
   * the task fails at once, whatever its retry policy; uncaught, its run fails without a
   * workflow-level retry. Default false.
   */
  nonRetryable?: boolean;
  cause?: unknown;
  /** What went wrong, stable and machine-readable (default `workflow_error`). */
  reason?: string;
}

/**
 * The base of the errors a workflow throws and catches, the engine's and your own: like Temporal's
 * ApplicationFailure, it says whether trying again may help. A subclass is named after itself.
 *
 * ```ts
 * throw new WorkflowError(`card ${card} declined`, { nonRetryable: true });
 * ```
 */
export class WorkflowError extends DurableError {
  constructor(message: string, { reason = 'workflow_error', ...options }: WorkflowErrorOptions = {}) {
    super(reason, message, options);
  }
}

/**
 * Whether `error` says trying again cannot help. Read from the flag rather than the class, so an
 * error from a second copy of this package, or a class of your own with `nonRetryable: true`, counts.
 */
export function isNonRetryable(error: unknown): boolean {
  return error instanceof Error && (error as { nonRetryable?: unknown }).nonRetryable === true;
}

/** Thrown inside a handler when this worker no longer owns the run: nothing more may be written. */
export class RunLostError extends WorkflowError {
  override name = 'RunLostError';

  constructor(runId: string, why: string) {
    super(`run ${runId} was lost by this worker: ${why}`, { reason: 'run_lost' });
  }
}

/**
 * Thrown inside a handler when the run suspended (durable sleep, event or child wait, long retry
 * wait): the handler stops here and continues from its recorded steps when the run is due again.
 * Do not catch it (or rethrow it).
 */
export class RunSuspendedError extends WorkflowError {
  override name = 'RunSuspendedError';

  constructor(runId: string, step: string) {
    super(`run ${runId} suspended at ${step}`, { reason: 'run_suspended' });
  }
}

/**
 * A task exhausted its attempts, or its last attempt threw a nonRetryable error (then this error is
 * nonRetryable too, so its run is not retried either); its recorded error is `details`, which keeps
 * the flag, so a replay of the recorded failure (after a re-execution) is nonRetryable as well.
 */
export class TaskFailedError extends WorkflowError {
  override name = 'TaskFailedError';

  constructor(
    readonly taskKey: string,
    readonly details: ErrorDetails,
    options: { nonRetryable?: boolean } = {},
  ) {
    super(`task ${taskKey} failed: ${details.message}`, { ...options, reason: 'task_failed' });
  }
}

export class TaskTimeoutError extends WorkflowError {
  override name = 'TaskTimeoutError';

  constructor(taskKey: string, timeoutMs: number) {
    super(`task ${taskKey} timed out after ${timeoutMs} ms`, { reason: 'task_timeout' });
  }
}

/** A step as a run's history records it or as the code calls it: its kind and its key (`sleep:nap#1`). */
export interface StepRef {
  readonly kind: string;
  readonly key: string;
}

/**
 * Where the code and a run's history part: the position (`seq`), the step the history holds there (null: none), and
 * the step the code now calls there (null: the code returns there).
 */
export interface StepDivergence {
  readonly seq: number;
  readonly recorded: StepRef | null;
  readonly called: StepRef | null;
}

/** The workflow code no longer matches the run's recorded history: replaying it would mix results. */
export class NonDeterminismError extends WorkflowError {
  override name = 'NonDeterminismError';

  constructor(
    message: string,
    /** Where they part, when the history's check found it (see StepHistory). */
    readonly divergence?: StepDivergence,
  ) {
    // The same code meets the same history on every attempt.
    super(message, { nonRetryable: true, reason: 'non_determinism' });
  }
}

/**
 * The workflow code called a step wrongly: a step name that is empty, too long or holds a reserved character, a
 * delay out of range. Not retried: the same code calls it the same way on every attempt.
 */
export class InvalidStepError extends WorkflowError {
  override name = 'InvalidStepError';

  constructor(message: string) {
    super(message, { nonRetryable: true, reason: 'step_invalid' });
  }
}

/**
 * A run reached a worker that does not host its workflow version (it was routed by a shard or queue that worker
 * serves, or the worker was redeployed without it). Retried by the workflow's policy: another worker may host it.
 */
export class WorkflowNotHostedError extends WorkflowError {
  override name = 'WorkflowNotHostedError';

  constructor(workflow: string, version: string) {
    super(`workflow ${workflow} ${version} is not registered on this worker`, { reason: 'workflow_not_hosted' });
  }
}

export class ChildRunFailedError extends WorkflowError {
  override name = 'ChildRunFailedError';

  constructor(
    readonly childId: string,
    readonly status: string,
    readonly details: ErrorDetails | null,
  ) {
    super(`child run ${childId} ${status}${details ? `: ${details.message}` : ''}`, { reason: 'child_run_failed' });
  }
}

export class ChildRunTimeoutError extends WorkflowError {
  override name = 'ChildRunTimeoutError';

  constructor(step: string) {
    super(`child run of step ${step} did not finish in time`, { reason: 'child_run_timeout' });
  }
}

/**
 * A thrown value as storable error details. Text is made safe for jsonb (no NUL, no lone UTF-16
 * surrogates), or a poisonous error message would be refused on every retry and wedge the run.
 */
export function toErrorDetails(error: unknown): ErrorDetails {
  if (error instanceof Error) {
    return {
      name: safeText(error.name),
      message: safeText(error.message),
      stack: error.stack === undefined ? undefined : safeText(error.stack),
      ...(isNonRetryable(error) ? { nonRetryable: true } : {}),
    };
  }
  return { name: 'Error', message: safeText(typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error))) };
}

function safeText(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}
