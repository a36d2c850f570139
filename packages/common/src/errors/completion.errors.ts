import type { JsonValue } from '../contract';
import { DurableError } from './durable.error';
import { WorkflowError } from './workflow.errors';

/*
 * Completion tokens (`ctx.awaitExternal`, `POST /v1/completions/{token}`): the coordinator's refusals of a
 * completion, and what the waiting workflow sees when the outside system failed the step or never answered.
 * The messages never repeat the token: it is a secret, and error messages end up in logs.
 */

/** No such token: never made, or its run was deleted (retention). */
export class CompletionTokenNotFoundError extends DurableError {
  static readonly reason = 'completion_token_not_found';

  constructor() {
    super(CompletionTokenNotFoundError.reason, 'no completion token matches');
  }
}

/** The token was completed or failed already: a token is used once. */
export class CompletionTokenUsedError extends DurableError {
  static readonly reason = 'completion_token_used';

  constructor(runId: string) {
    super(CompletionTokenUsedError.reason, `the completion token of run ${runId} was used already`);
  }
}

/** The token expired (its wait resolved as timed out), or its run ended without it. */
export class CompletionTokenExpiredError extends DurableError {
  static readonly reason = 'completion_token_expired';

  constructor(runId: string, why: string) {
    super(CompletionTokenExpiredError.reason, `the completion token of run ${runId} no longer takes a completion: ${why}`);
  }
}

/** What the outside system said when it failed a completion token's step. */
export interface CompletionFailure {
  name: string;
  message: string;
  data: JsonValue;
}

/** The outside system failed the step (`POST /v1/completions/{token}` with `error`): catch it to handle the failure. */
export class CompletionFailedError extends WorkflowError {
  override name = 'CompletionFailedError';

  constructor(
    readonly step: string,
    readonly details: CompletionFailure,
  ) {
    super(`the outside system failed step ${step}: ${details.name}: ${details.message}`, { reason: 'completion_failed' });
  }
}

/** The completion token expired before the outside system completed it (`ctx.awaitExternal`'s `timeoutMs`). */
export class CompletionTimeoutError extends WorkflowError {
  override name = 'CompletionTimeoutError';

  constructor(step: string) {
    super(`the completion token of step ${step} expired before it was completed`, { reason: 'completion_timeout' });
  }
}
