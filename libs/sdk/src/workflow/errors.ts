import type { ErrorDetails } from '@app/contracts';

/** Thrown inside a handler when this worker no longer owns the run: nothing more may be written. */
export class RunLostError extends Error {
  override name = 'RunLostError';

  constructor(runId: string, why: string) {
    super(`run ${runId} was lost by this worker: ${why}`);
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

export function toErrorDetails(error: unknown): ErrorDetails {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: typeof error === 'string' ? error : JSON.stringify(error) ?? String(error) };
}
