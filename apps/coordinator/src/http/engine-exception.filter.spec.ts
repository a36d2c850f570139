import { afterEach, describe, expect, it, jest } from '@jest/globals';
import * as common from '@nest-durable/common';
import {
  ANSWERED_ERROR_CLASSES,
  CompletionTokenExpiredError,
  CompletionTokenNotFoundError,
  CompletionTokenUsedError,
  DatabaseUnavailableError,
  DeadLetterNotFoundError,
  DurableError,
  type ErrorBody,
  InvalidRequestError,
  OfferExistsError,
  OfferNotFoundError,
  PayloadTooLargeError,
  RevisionConflictError,
  RunAlreadyTerminalError,
  RunNotFailedError,
  RunNotFinishedError,
  QueryNotFoundError,
  RunNotFoundError,
  RunNotSleepingError,
  rebuildError,
  ScheduleDeclaredInCodeError,
  ScheduleNotFoundError,
  StepConflictError,
  UnauthorizedError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
  UpdateFailedError,
  UpdateNotDeclaredError,
  UpdateNotFoundError,
  UpdateRefusedError,
  WorkflowError,
  TooManyPendingEventsError,
} from '@nest-durable/common';
import { type ArgumentsHost, Logger, NotFoundException } from '@nestjs/common';
import type { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { EngineExceptionFilter } from './engine-exception.filter';

const RUN = '01a23292-e466-76ce-9ad8-c86c6dd448fb';

/** One error of each class the coordinator answers with, and the status its answer has (the API description's). */
const REFUSALS: [DurableError, number][] = [
  [new InvalidRequestError('invalid_run_id', 'run_id must be a UUID'), 400],
  [new InvalidRequestError('input_too_large', 'input is 2000000 bytes; the limit is 1048576'), 400],
  [new UnauthorizedError('client'), 401],
  [new RunNotFoundError(RUN), 404],
  [new QueryNotFoundError(RUN, 'stage'), 404],
  [new ScheduleNotFoundError('s-1'), 404],
  [new OfferNotFoundError('o-1'), 404],
  [new DeadLetterNotFoundError('d-1'), 404],
  [new CompletionTokenNotFoundError(), 404],
  [new RevisionConflictError(RUN, 3), 409],
  [new StepConflictError(RUN, 'a#1', 'task', 'sleep'), 409],
  [new RunAlreadyTerminalError(RUN, 'completed'), 409],
  [new RunNotSleepingError(RUN, 'running'), 409],
  [new RunNotFailedError(RUN, 'running'), 409],
  [new RunNotFinishedError(RUN, 'running'), 409],
  [new TooManyPendingEventsError(RUN, 1000), 409],
  [new ScheduleDeclaredInCodeError('s-1', 'w 1 nightly'), 409],
  [new OfferExistsError('o-1'), 409],
  [new CompletionTokenUsedError(RUN), 409],
  [new CompletionTokenExpiredError(RUN, 'it timed out'), 410],
  [new PayloadTooLargeError(2_097_152), 413],
  [new UnsupportedMediaTypeError('text/plain'), 415],
  [new UnsupportedContentEncodingError('compress'), 415],
  [new DatabaseUnavailableError('ECONNREFUSED'), 503],
  [new UpdateNotDeclaredError('cart', '1', 'addItem', ['checkout']), 404],
  [new UpdateNotFoundError(RUN, RUN), 404],
  [new UpdateRefusedError(RUN, RUN), 409],
  [new UpdateFailedError('update_failed', 'update addItem failed: Error: out of stock'), 422],
];

/** The filter, and what it answers `thrown` with. */
function answer(thrown: unknown): { body: ErrorBody; revisionConflicts: number } {
  let revisionConflicts = 0;
  const filter = new EngineExceptionFilter({ revisionConflicts: { inc: () => revisionConflicts++ } } as unknown as CoordinatorMetrics);
  const reply = {
    sent: false,
    raw: { headersSent: false },
    code: 0,
    body: undefined as unknown,
    status(code: number) {
      reply.code = code;
      return reply;
    },
    send(body: unknown) {
      reply.body = body;
    },
  };
  filter.catch(thrown, { switchToHttp: () => ({ getResponse: () => reply }) } as unknown as ArgumentsHost);
  const body = reply.body as ErrorBody;
  expect(reply.code).toBe(body.statusCode);
  return { body, revisionConflicts };
}

describe('EngineExceptionFilter', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('has a status for every class of the errors @nest-durable/common defines, but the workflow errors (thrown in workers only)', () => {
    const defined = (Object.values(common) as unknown[]).filter(
      (value) =>
        typeof value === 'function' && value.prototype instanceof DurableError && !(value.prototype instanceof WorkflowError) && value !== WorkflowError,
    );
    expect(new Set(defined)).toEqual(new Set(ANSWERED_ERROR_CLASSES));
    expect(new Set(REFUSALS.map(([error]) => error.constructor))).toEqual(new Set(ANSWERED_ERROR_CLASSES));
  });

  const cases = REFUSALS.map(([thrown, status]) => ({ name: thrown.name, reason: thrown.reason, thrown, status }));

  it.each(cases)('answers $name ($reason) with the status of its reason', ({ thrown, status }) => {
    expect(answer(thrown).body).toEqual({ statusCode: status, error: expect.any(String), reason: thrown.reason, message: thrown.message });
  });

  it.each(cases)('answers $name ($reason) with a body a client rebuilds the same error from', ({ thrown }) => {
    const { body } = answer(thrown);
    const rebuilt = rebuildError(body.reason, body.message);
    expect([rebuilt.constructor, rebuilt.name, rebuilt.reason, rebuilt.message]).toEqual([thrown.constructor, thrown.name, thrown.reason, thrown.message]);
  });

  it('chooses the status from the reason, not from the class that carries it', () => {
    expect(answer(new DurableError('run_not_found', `run ${RUN} does not exist`)).body).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('answers an error of a reason without a status, and anything else, as an internal error it logs', () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const internal = { statusCode: 500, error: 'Internal Server Error', reason: 'internal_error', message: 'internal error; see the coordinator log' };
    expect(answer(new WorkflowError('not for an answer')).body).toEqual(internal);
    expect(answer(new DurableError('config_invalid', 'PORT must be an integer')).body).toEqual(internal);
    expect(answer(new Error('boom')).body).toEqual(internal);
    expect(logged).toHaveBeenCalledTimes(3);
  });

  it("answers the framework's own errors by their status", () => {
    expect(answer(new NotFoundException('Route GET:/v1/nope not found')).body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      reason: 'route_not_found',
      message: 'Route GET:/v1/nope not found',
    });
  });

  it('counts revision conflicts', () => {
    expect(answer(new RevisionConflictError(RUN, 3)).revisionConflicts).toBe(1);
    expect(answer(new RunNotFoundError(RUN)).revisionConflicts).toBe(0);
  });
});
