import { describe, expect, it } from '@jest/globals';
import { API, type Endpoint } from '../contract/endpoints';
import { REASON } from '../contract/fields';
import { DOCUMENT_FIELD } from '../contract/json-document';
import { DurableError } from './durable.error';
import { DatabaseUnavailableError, InvalidRequestError, RevisionConflictError, RunNotFoundError, UnauthorizedError } from './engine.errors';
import { ANSWERED_ERROR_CLASSES, errorClassOf, rebuildError } from './error-registry';
import { WorkflowError } from './workflow.errors';

/** Every reason the contract's schemas refuse a value with: each field's `x-reason`, and each JSON document's problems. */
function contractReasons(): Set<string> {
  const reasons = new Set<string>();
  const seen = new Set<object>();
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    const schema = value as Record<string | symbol, unknown>;
    if (typeof schema[REASON] === 'string') reasons.add(schema[REASON]);
    const document = schema[DOCUMENT_FIELD];
    if (typeof document === 'string')
      for (const reason of [`${document}_too_large`, 'json_too_deep', 'json_nul_character', 'json_invalid_unicode']) reasons.add(reason);
    for (const item of Object.values(schema)) visit(item);
  };
  for (const endpoint of Object.values(API) as Endpoint[]) for (const part of [endpoint.params, endpoint.query, endpoint.body]) visit(part);
  return reasons;
}

describe('the reasons of the errors the coordinator answers with', () => {
  it('name one class each: the one whose static reason it is', () => {
    const ofOneReason = ANSWERED_ERROR_CLASSES.filter((errorClass) => errorClass !== InvalidRequestError) as unknown as { reason: string }[];
    expect(new Set(ofOneReason.map((errorClass) => errorClass.reason)).size).toBe(ofOneReason.length);
    for (const errorClass of ofOneReason) expect(errorClassOf(errorClass.reason)).toBe(errorClass);
  });

  it("name InvalidRequestError for every reason the contract's schemas refuse a request with, and for those said by hand", () => {
    const reasons = [...contractReasons(), 'unknown_field', 'invalid_body', 'invalid_json', 'invalid_idempotencyKey', 'invalid_schedules'];
    expect(reasons).toEqual(expect.arrayContaining(['invalid_run_id', 'invalid_limit', 'input_too_large', 'error_too_large', 'invalid_tag_key']));
    expect(reasons.filter((reason) => errorClassOf(reason) !== InvalidRequestError)).toEqual([]);
  });

  it('name no class for a reason no class carries', () => {
    for (const reason of ['route_not_found', 'internal_error', 'workflow_error', 'invalid', 'toString', 'constructor'])
      expect(errorClassOf(reason)).toBeUndefined();
  });
});

describe('rebuildError', () => {
  it('rebuilds the class a reason names, with the reason and the message', () => {
    const thrown = new RunNotFoundError('r-1');
    const rebuilt = rebuildError(thrown.reason, thrown.message);
    expect(rebuilt).toBeInstanceOf(RunNotFoundError);
    expect([rebuilt.constructor, rebuilt.name, rebuilt.reason, rebuilt.message, rebuilt.nonRetryable]).toEqual([
      RunNotFoundError,
      'RunNotFoundError',
      'run_not_found',
      'run r-1 does not exist',
      false,
    ]);
  });

  it('rebuilds an InvalidRequestError with the reason it was refused for', () => {
    const rebuilt = rebuildError('invalid_limit', 'limit must be an integer from 1 to 1000');
    expect([rebuilt.constructor, rebuilt.reason]).toEqual([InvalidRequestError, 'invalid_limit']);
  });

  it('rebuilds a reason no class carries as a DurableError of that reason', () => {
    const rebuilt = rebuildError('route_not_found', 'Route GET:/v1/nope not found');
    expect([rebuilt.constructor, rebuilt.name, rebuilt.reason, rebuilt.message]).toEqual([
      DurableError,
      'DurableError',
      'route_not_found',
      'Route GET:/v1/nope not found',
    ]);
  });

  it('leaves what the answer does not carry unset', () => {
    expect((rebuildError('revision_conflict', 'stale') as RevisionConflictError).expectedRevision).toBeUndefined();
  });
});

describe('DurableError', () => {
  it("is the root of the coordinator's errors and of the workflow errors, with a reason and nonRetryable", () => {
    const errors = [new UnauthorizedError('client'), new DatabaseUnavailableError('ECONNREFUSED'), new WorkflowError('card declined')];
    for (const error of errors) expect(error).toBeInstanceOf(DurableError);
    expect(errors.map(({ name, reason, nonRetryable }) => [name, reason, nonRetryable])).toEqual([
      ['UnauthorizedError', 'unauthorized', false],
      ['DatabaseUnavailableError', 'database_unavailable', false],
      ['WorkflowError', 'workflow_error', false],
    ]);
  });

  it('keeps what caused it', () => {
    const cause = new Error('socket hang up');
    expect(new DurableError('x', 'y', { cause, nonRetryable: true })).toMatchObject({ cause, nonRetryable: true, reason: 'x', message: 'y' });
  });
});
