import { CompletionTokenExpiredError, CompletionTokenNotFoundError, CompletionTokenUsedError } from './completion.errors';
import { DurableError } from './durable.error';
import {
  DatabaseUnavailableError,
  DeadLetterNotFoundError,
  InvalidRequestError,
  OfferExistsError,
  OfferNotFoundError,
  PayloadTooLargeError,
  QueryNotFoundError,
  RevisionConflictError,
  RunAlreadyTerminalError,
  RunNotFailedError,
  RunNotFinishedError,
  RunNotFoundError,
  RunNotSleepingError,
  ScheduleDeclaredInCodeError,
  ScheduleNotFoundError,
  StepConflictError,
  TooManyPendingEventsError,
  UnauthorizedError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
} from './engine.errors';
import { UpdateFailedError, UpdateNotDeclaredError, UpdateNotFoundError, UpdateRefusedError } from './update.errors';

/** A class of the errors the coordinator answers with. */
export type AnsweredErrorClass = abstract new (...args: never[]) => DurableError;

/** The refusals of one reason each (their static `reason`), by it. */
const BY_REASON = new Map<string, AnsweredErrorClass>(
  [
    UnsupportedMediaTypeError,
    UnsupportedContentEncodingError,
    PayloadTooLargeError,
    UnauthorizedError,
    RunNotFoundError,
    QueryNotFoundError,
    RevisionConflictError,
    StepConflictError,
    RunAlreadyTerminalError,
    TooManyPendingEventsError,
    RunNotSleepingError,
    RunNotFailedError,
    RunNotFinishedError,
    ScheduleNotFoundError,
    ScheduleDeclaredInCodeError,
    OfferNotFoundError,
    OfferExistsError,
    DeadLetterNotFoundError,
    DatabaseUnavailableError,
    CompletionTokenNotFoundError,
    CompletionTokenUsedError,
    CompletionTokenExpiredError,
    UpdateNotDeclaredError,
    UpdateNotFoundError,
    UpdateRefusedError,
    UpdateFailedError,
  ].map((errorClass) => [errorClass.reason, errorClass]),
);

/** Every class of the errors the coordinator answers with: the one for each reason (see errorClassOf). */
export const ANSWERED_ERROR_CLASSES: readonly AnsweredErrorClass[] = [InvalidRequestError, ...BY_REASON.values()];

/** The class of the coordinator's errors that carries `reason`, if one does. */
export function errorClassOf(reason: string): AnsweredErrorClass | undefined {
  return BY_REASON.get(reason) ?? (InvalidRequestError.covers(reason) ? InvalidRequestError : undefined);
}

/**
 * The error an answer's `reason` and `message` report, as the class that carries the reason (`run_not_found`: a
 * RunNotFoundError), or a DurableError with that reason if no class does (a reason of a newer coordinator, or of
 * the HTTP layer: `route_not_found`). Only the root's constructor runs, so the class's own fields
 * (RevisionConflictError's `expectedRevision`) stay unset: the answer does not carry them.
 */
export function rebuildError(reason: string, message: string): DurableError {
  return Reflect.construct(DurableError, [reason, message], errorClassOf(reason) ?? DurableError);
}
