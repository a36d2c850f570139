import {
  type AnsweredErrorClass,
  CompletionTokenExpiredError,
  CompletionTokenNotFoundError,
  CompletionTokenUsedError,
  DatabaseUnavailableError,
  DeadLetterNotFoundError,
  DurableError,
  errorClassOf,
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
  UpdateFailedError,
  UpdateNotDeclaredError,
  UpdateNotFoundError,
  UpdateRefusedError,
} from '@nest-durable/common';

/**
 * The HTTP status of each of the coordinator's refusals: the one place that says it (the errors carry none). Keyed
 * by the class that carries a reason (errorClassOf), since one class carries a family of them (InvalidRequestError's
 * `invalid_<field>`, …). The API description (openapi-document.ts) tells the same statuses.
 */
const STATUS_BY_ERROR_CLASS = new Map<AnsweredErrorClass, number>([
  [InvalidRequestError, 400],
  [UnauthorizedError, 401],
  [RunNotFoundError, 404],
  [QueryNotFoundError, 404],
  [ScheduleNotFoundError, 404],
  [OfferNotFoundError, 404],
  [DeadLetterNotFoundError, 404],
  [CompletionTokenNotFoundError, 404],
  [RevisionConflictError, 409],
  [StepConflictError, 409],
  [RunAlreadyTerminalError, 409],
  [TooManyPendingEventsError, 409],
  [RunNotSleepingError, 409],
  [RunNotFailedError, 409],
  [RunNotFinishedError, 409],
  [ScheduleDeclaredInCodeError, 409],
  [OfferExistsError, 409],
  [CompletionTokenUsedError, 409],
  [CompletionTokenExpiredError, 410],
  [PayloadTooLargeError, 413],
  [UnsupportedMediaTypeError, 415],
  [UnsupportedContentEncodingError, 415],
  [DatabaseUnavailableError, 503],
  [UpdateNotDeclaredError, 404],
  [UpdateNotFoundError, 404],
  [UpdateRefusedError, 409],
  [UpdateFailedError, 422],
]);

/** The status an error's reason is answered with; undefined for one the table does not know (a 500, logged). */
export function statusOfReason(reason: string): number | undefined {
  const errorClass = errorClassOf(reason);
  return errorClass && STATUS_BY_ERROR_CLASS.get(errorClass);
}

/** How the coordinator answers a refusal: its reason and message, with the status of its reason. */
export interface Refusal {
  statusCode: number;
  reason: string;
  message: string;
}

/** `error` as the refusal it is, or undefined if it is none (no DurableError, or of a reason without a status). */
export function refusalOf(error: unknown): Refusal | undefined {
  if (!(error instanceof DurableError)) return undefined;
  const statusCode = statusOfReason(error.reason);
  return statusCode === undefined ? undefined : { statusCode, reason: error.reason, message: error.message };
}
