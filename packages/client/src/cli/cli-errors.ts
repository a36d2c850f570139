import { DurableError } from '@nest-durable/common';
import { CoordinatorUnavailableError, isAnsweredError } from '../json-http.client';

/** A mistake on the command line found after parsing (e.g. a bad WF_URL): nothing was sent. */
export class UsageError extends DurableError {
  constructor(message: string) {
    super('usage_invalid', message);
  }
}

/**
 * The one line `wf` prints on stderr (after `wf: `) for a failure: the API's stable reason (or the client's, for
 * what it refuses itself) and its message, or why the coordinator at `url` could not be asked.
 */
export function describeFailure(error: unknown, url: string | undefined): string {
  if (isAnsweredError(error)) return `${error.reason}: ${error.message}`;
  if (error instanceof CoordinatorUnavailableError) return `unreachable: no coordinator answered at ${url ?? 'its URL'} (${error.message})`;
  if (error instanceof UsageError) return error.message;
  // Refused by the client's own check before anything was sent (a malformed --traceparent): its reason, as the API's.
  if (error instanceof DurableError) return `${error.reason}: ${error.message}`;
  // Not a failure we expect: still one line, naming what was thrown.
  return error instanceof Error ? `${error.name}: ${error.message}`.replaceAll('\n', ' ') : String(error);
}
