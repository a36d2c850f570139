import type { ExternalStepOutput, StoredTask } from '@nest-durable/common';
import { CompletionFailedError, CompletionTimeoutError, type ExternalResult } from '@nest-durable/workflow';

/** A `token` step's key is `token:<name>#<n>`; the wait on that token is `external:<name>#<n>`. */
export function waitKeyOf(tokenKey: string): string {
  return `external:${tokenKey.slice('token:'.length)}`;
}

/**
 * `ctx.awaitExternal`'s `result`: the wait at step `key` starts only when it is first awaited (`then`), and then
 * once, so the run suspends where the workflow waits for it, not where it made the token.
 */
export class LazyResult<T> implements ExternalResult<T> {
  readonly kind = 'external';
  private started?: Promise<T>;

  constructor(
    readonly name: string,
    readonly key: string,
    private readonly start: () => Promise<T>,
  ) {}

  // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose, so that `await` starts it
  then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.started ??= this.start();
    return this.started.then(onFulfilled, onRejected);
  }
}

/** A resolved `external` step's outcome, as `await result` answers it: the data, or why there is none (thrown). */
export function externalResultOf<T>(step: StoredTask): T {
  const outcome = step.output as unknown as ExternalStepOutput;
  if (outcome.timedOut) throw new CompletionTimeoutError(step.key);
  if (outcome.status === 'failed') throw new CompletionFailedError(step.key, outcome.error);
  return outcome.data as T;
}
