import { type Static, Type } from '@sinclair/typebox';

/**
 * Domain errors shared by the coordinator (which maps them to HTTP at its edge) and the SDK
 * (which rebuilds them from error bodies). `reason` is the stable, machine-readable part.
 */
export abstract class EngineError extends Error {
  abstract readonly statusCode: number;

  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request itself is wrong (400): nothing was changed. */
export class InvalidRequestError extends EngineError {
  readonly statusCode = 400;
}

/** The body is not JSON (415): nothing was read or changed. */
export class UnsupportedMediaTypeError extends EngineError {
  readonly statusCode = 415;

  constructor(contentType: string | undefined) {
    super('unsupported_media_type', `send the body as application/json (it was ${contentType ? `sent as ${contentType}` : 'sent without a content type'})`);
  }
}

export class RunNotFoundError extends EngineError {
  readonly statusCode = 404;

  constructor(runId: string) {
    super('run_not_found', `run ${runId} does not exist`);
  }
}

/**
 * The run moved on since the caller last saw it (409): another worker claimed it, it was
 * cancelled, or it already finished. The write was not applied.
 */
export class RevisionConflictError extends EngineError {
  readonly statusCode = 409;

  constructor(
    runId: string,
    readonly expectedRevision: number,
  ) {
    super('revision_conflict', `run ${runId} is no longer at revision ${expectedRevision} in a running state`);
  }
}

/**
 * A worker's step names a key the run already recorded as another kind of step (409): a recorded
 * step is never replaced, whatever a worker sends. Nothing was changed.
 */
export class StepConflictError extends EngineError {
  readonly statusCode = 409;

  constructor(runId: string, key: string, recordedKind: string, kind: string) {
    super('step_conflict', `run ${runId} recorded step ${key} as a ${recordedKind} step; a ${kind} step cannot replace it`);
  }
}

export class RunAlreadyTerminalError extends EngineError {
  readonly statusCode = 409;

  constructor(runId: string, status: string) {
    super('run_terminal', `run ${runId} is already ${status}`);
  }
}

export class RunNotSleepingError extends EngineError {
  readonly statusCode = 409;

  constructor(runId: string, status: string) {
    super('run_not_sleeping', `run ${runId} is not in a durable sleep (it is ${status})`);
  }
}

export class RunNotFailedError extends EngineError {
  readonly statusCode = 409;

  constructor(runId: string, status: string) {
    super('run_not_failed', `run ${runId} can only be retried once failed (it is ${status})`);
  }
}

export class ScheduleNotFoundError extends EngineError {
  readonly statusCode = 404;

  constructor(id: string) {
    super('schedule_not_found', `schedule ${id} does not exist`);
  }
}

/**
 * A schedule declared in code whose version online workers host is changed by changing the code (409):
 * it can be paused, resumed and triggered.
 */
export class ScheduleDeclaredInCodeError extends EngineError {
  readonly statusCode = 409;

  constructor(id: string, name: string) {
    super('schedule_in_code', `schedule ${id} is declared in code (${name}) that online workers host: remove it there, or pause it`);
  }
}

/** Body of every error response of the coordinator. */
export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String({ description: 'the HTTP status text' }),
    reason: Type.String({ description: 'stable and machine-readable: `invalid_<field>`, `unknown_field`, `run_not_found`, `revision_conflict`, …' }),
    message: Type.String({ description: 'one line for a human' }),
  },
  { additionalProperties: false, title: 'ErrorBody' },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** Missing or wrong bearer token (401): nothing was read or changed. */
export class UnauthorizedError extends EngineError {
  readonly statusCode = 401;

  constructor(audience: string) {
    super('unauthorized', `a valid ${audience} bearer token is required (Authorization: Bearer <token>)`);
  }
}

/** No offer of that id waits on this coordinator: it answered already, or it waits on another one. */
export class OfferNotFoundError extends EngineError {
  readonly statusCode = 404;

  constructor(id: string) {
    super('offer_not_found', `no offer ${id} waits on this coordinator (it answered, or it was made to another coordinator)`);
  }
}

/** An offer of that id waits on this coordinator already (offer ids are the worker's, one per offer). */
export class OfferExistsError extends EngineError {
  readonly statusCode = 409;

  constructor(id: string) {
    super('offer_exists', `offer ${id} waits on this coordinator already: each offer needs an id of its own`);
  }
}

export class DeadLetterNotFoundError extends EngineError {
  readonly statusCode = 404;

  constructor(id: string) {
    super('dead_letter_not_found', `dead letter ${id} does not exist`);
  }
}

/**
 * PostgreSQL could not be reached, or the connection carrying the request died (503). Its changes
 * were rolled back, unless the connection died between their commit and its answer; worker writes
 * are revision-fenced, so retrying one is safe either way.
 */
export class DatabaseUnavailableError extends EngineError {
  readonly statusCode = 503;

  constructor(cause: string) {
    super('database_unavailable', `the database is unavailable (${cause}); retry later`);
  }
}
