import { DurableError } from './durable.error';

/**
 * The coordinator's refusals: what a request it answers with an error was refused for. Its HTTP edge chooses each
 * answer's status from the reason (apps/coordinator/src/http/error-statuses.ts); a client rebuilds the class from
 * the reason (error-registry.ts). Each class but InvalidRequestError has one reason, its static `reason`.
 */

/**
 * The request itself is wrong: nothing was changed. Its reason names the problem: `invalid_<field>` (the field's
 * `x-reason`), `unknown_field`, `json_<problem>` of a JSON document, `<field>_too_large` of one.
 */
export class InvalidRequestError extends DurableError {
  /** Whether `reason` is one an InvalidRequestError carries (the shapes above). */
  static covers(reason: string): boolean {
    return INVALID_REQUEST_REASON.test(reason);
  }
}

const INVALID_REQUEST_REASON = /^(?:invalid_\w+|unknown_field|json_\w+|\w+_too_large)$/;

/** The body is not JSON: nothing was read or changed. */
export class UnsupportedMediaTypeError extends DurableError {
  static readonly reason = 'unsupported_media_type';

  constructor(contentType: string | undefined) {
    super(
      UnsupportedMediaTypeError.reason,
      `send the body as application/json (it was ${contentType ? `sent as ${contentType}` : 'sent without a content type'})`,
    );
  }
}

/** The body came in a content coding the coordinator does not inflate (it takes gzip, deflate and br): nothing was read or changed. */
export class UnsupportedContentEncodingError extends DurableError {
  static readonly reason = 'unsupported_content_encoding';

  constructor(encoding: string) {
    super(UnsupportedContentEncodingError.reason, `send the body as it is, or in gzip, deflate or br (it was sent in ${encoding})`);
  }
}

/**
 * The body is over the coordinator's BODY_LIMIT_BYTES (once inflated, when it came compressed): nothing was parsed or
 * changed. Its own reason, not InvalidRequestError's `<field>_too_large`: it is answered 413.
 */
export class PayloadTooLargeError extends DurableError {
  static readonly reason = 'payload_too_large';

  constructor(limitBytes: number) {
    super(PayloadTooLargeError.reason, `the request body is over ${limitBytes} bytes (BODY_LIMIT_BYTES; inflated, if it was compressed)`);
  }
}

/** Missing or wrong bearer token: nothing was read or changed. */
export class UnauthorizedError extends DurableError {
  static readonly reason = 'unauthorized';

  constructor(audience: string) {
    super(UnauthorizedError.reason, `a valid ${audience} bearer token is required (Authorization: Bearer <token>)`);
  }
}

export class RunNotFoundError extends DurableError {
  static readonly reason = 'run_not_found';

  constructor(runId: string) {
    super(RunNotFoundError.reason, `run ${runId} does not exist`);
  }
}

/**
 * The run moved on since the caller last saw it: another worker claimed it, it was cancelled, or it already
 * finished. The write was not applied. (`expectedRevision` is this process's: a client's rebuilt one has none.)
 */
export class RevisionConflictError extends DurableError {
  static readonly reason = 'revision_conflict';

  constructor(
    runId: string,
    readonly expectedRevision: number,
  ) {
    super(RevisionConflictError.reason, `run ${runId} is no longer at revision ${expectedRevision} in a running state`);
  }
}

/**
 * A worker's step names a key the run already recorded as another kind of step: a recorded step is never
 * replaced, whatever a worker sends. Nothing was changed.
 */
export class StepConflictError extends DurableError {
  static readonly reason = 'step_conflict';

  constructor(runId: string, key: string, recordedKind: string, kind: string) {
    super(StepConflictError.reason, `run ${runId} recorded step ${key} as a ${recordedKind} step; a ${kind} step cannot replace it`);
  }
}

export class RunAlreadyTerminalError extends DurableError {
  static readonly reason = 'run_terminal';

  constructor(runId: string, status: string) {
    super(RunAlreadyTerminalError.reason, `run ${runId} is already ${status}`);
  }
}

export class RunNotFinishedError extends DurableError {
  static readonly reason = 'run_not_finished';

  constructor(runId: string, status: string) {
    super(RunNotFinishedError.reason, `run ${runId} can only be rerun once finished (it is ${status})`);
  }
}

/**
 * The run already keeps as many events sent before a wait as it may (PENDING_EVENTS_PER_RUN_MAX): this one was not
 * kept, and nothing changed. The run's waits consume them; a run that never waits for them should not be sent them.
 */
export class TooManyPendingEventsError extends DurableError {
  static readonly reason = 'too_many_pending_events';

  constructor(runId: string, max: number) {
    super(TooManyPendingEventsError.reason, `run ${runId} already keeps ${max} events no wait has consumed; this one was not kept`);
  }
}

export class RunNotSleepingError extends DurableError {
  static readonly reason = 'run_not_sleeping';

  constructor(runId: string, status: string) {
    super(RunNotSleepingError.reason, `run ${runId} is not in a durable sleep (it is ${status})`);
  }
}

export class RunNotFailedError extends DurableError {
  static readonly reason = 'run_not_failed';

  constructor(runId: string, status: string) {
    super(RunNotFailedError.reason, `run ${runId} can only be retried once failed (it is ${status})`);
  }
}

/** The run exposed no value and completed no task of the name a query asked for (GET /v1/runs/{id}/queries/{name}). */
export class QueryNotFoundError extends DurableError {
  static readonly reason = 'query_not_found';

  constructor(runId: string, name: string) {
    super(QueryNotFoundError.reason, `run ${runId} has no value or completed task called ${JSON.stringify(name)}`);
  }
}

export class ScheduleNotFoundError extends DurableError {
  static readonly reason = 'schedule_not_found';

  constructor(id: string) {
    super(ScheduleNotFoundError.reason, `schedule ${id} does not exist`);
  }
}

/**
 * A schedule declared in code whose version online workers host is changed by changing the code: it can be
 * paused, resumed and triggered.
 */
export class ScheduleDeclaredInCodeError extends DurableError {
  static readonly reason = 'schedule_in_code';

  constructor(id: string, name: string) {
    super(ScheduleDeclaredInCodeError.reason, `schedule ${id} is declared in code (${name}) that online workers host: remove it there, or pause it`);
  }
}

/** No offer of that id waits on this coordinator: it answered already, or it waits on another one. */
export class OfferNotFoundError extends DurableError {
  static readonly reason = 'offer_not_found';

  constructor(id: string) {
    super(OfferNotFoundError.reason, `no offer ${id} waits on this coordinator (it answered, or it was made to another coordinator)`);
  }
}

/** An offer of that id waits on this coordinator already (offer ids are the worker's, one per offer). */
export class OfferExistsError extends DurableError {
  static readonly reason = 'offer_exists';

  constructor(id: string) {
    super(OfferExistsError.reason, `offer ${id} waits on this coordinator already: each offer needs an id of its own`);
  }
}

export class DeadLetterNotFoundError extends DurableError {
  static readonly reason = 'dead_letter_not_found';

  constructor(id: string) {
    super(DeadLetterNotFoundError.reason, `dead letter ${id} does not exist`);
  }
}

/**
 * PostgreSQL could not be reached, or the connection carrying the request died. Its changes were rolled back,
 * unless the connection died between their commit and its answer; worker writes are revision-fenced, so retrying
 * one is safe either way.
 */
export class DatabaseUnavailableError extends DurableError {
  static readonly reason = 'database_unavailable';

  constructor(cause: string) {
    super(DatabaseUnavailableError.reason, `the database is unavailable (${cause}); retry later`);
  }
}
