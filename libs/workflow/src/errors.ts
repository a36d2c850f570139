import type { ErrorDetails } from '@nest-durable/client';

/** Thrown inside a handler when this worker no longer owns the run: nothing more may be written. */
export class RunLostError extends Error {
  override name = 'RunLostError';

  constructor(runId: string, why: string) {
    super(`run ${runId} was lost by this worker: ${why}`);
  }
}

/**
 * Thrown inside a handler when the run suspended (durable sleep, event or child wait, long retry
 * wait): the handler stops here and continues from its recorded steps when the run is due again.
 * Do not catch it (or rethrow it).
 */
export class RunSuspendedError extends Error {
  override name = 'RunSuspendedError';

  constructor(runId: string, step: string) {
    super(`run ${runId} suspended at ${step}`);
  }
}

/** A task exhausted its attempts; its recorded error is `details`. */
export class TaskFailedError extends Error {
  override name = 'TaskFailedError';

  constructor(
    readonly taskKey: string,
    readonly details: ErrorDetails,
  ) {
    super(`task ${taskKey} failed: ${details.message}`);
  }
}

export class TaskTimeoutError extends Error {
  override name = 'TaskTimeoutError';

  constructor(taskKey: string, timeoutMs: number) {
    super(`task ${taskKey} timed out after ${timeoutMs} ms`);
  }
}

/** The workflow code no longer matches the run's recorded history: replaying it would mix results. */
export class NonDeterminismError extends Error {
  override name = 'NonDeterminismError';
}

export class ChildRunFailedError extends Error {
  override name = 'ChildRunFailedError';

  constructor(
    readonly childId: string,
    readonly status: string,
    readonly details: ErrorDetails | null,
  ) {
    super(`child run ${childId} ${status}${details ? `: ${details.message}` : ''}`);
  }
}

export class ChildRunTimeoutError extends Error {
  override name = 'ChildRunTimeoutError';

  constructor(step: string) {
    super(`child run of step ${step} did not finish in time`);
  }
}

/**
 * A thrown value as storable error details. Text is made safe for jsonb (no NUL, no lone UTF-16
 * surrogates), or a poisonous error message would be refused on every retry and wedge the run.
 */
export function toErrorDetails(error: unknown): ErrorDetails {
  if (error instanceof Error) {
    return { name: safeText(error.name), message: safeText(error.message), stack: error.stack === undefined ? undefined : safeText(error.stack) };
  }
  return { name: 'Error', message: safeText(typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error))) };
}

function safeText(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}
