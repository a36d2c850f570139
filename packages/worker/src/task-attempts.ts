import type { ErrorDetails, JsonValue } from '@nest-durable/common';
import { isNonRetryable, retryDelayMs, type TaskContext, TaskTimeoutError, type TaskOptions, toErrorDetails } from '@nest-durable/workflow';
import type { RunLease } from '@app/locking';
import type { AttemptClock } from './attempt-clock';
import { toJson } from './json-values';
import type { ResolvedWorkerOptions } from './worker.options';

/** How a task's attempts in this execution ended: its output, or the error of its last attempt. */
export type AttemptOutcome = { ok: true; output: JsonValue; attempts: number } | { ok: false; error: ErrorDetails; attempts: number; nonRetryable: boolean };

/** A task's retry that is due too late to wait for in process (see TaskAttempts.suspendForRetry). */
export interface RetryWait {
  /** The task's step key. */
  key: string;
  seq: number;
  name: string;
  delayMs: number;
  /** The attempts made so far, this one included. */
  attempts: number;
  /** The clock of this execution's attempts: what it timed goes with the wait. */
  clock: AttemptClock;
}

/**
 * Runs a task's attempts (a `ctx.task`, or a wait group's task branch) under the run's claim: each with the claim's
 * signal (and the task's timeout), retried as its retry policy says, in process while the wait is short.
 */
export class TaskAttempts {
  constructor(
    private readonly lease: RunLease,
    private readonly options: Pick<ResolvedWorkerOptions, 'inProcessRetryMaxMs'>,
    /** Suspends the run until the retry is due: this execution ends there (it throws, unless the run did not suspend). */
    private readonly suspendForRetry: (wait: RetryWait) => Promise<unknown>,
  ) {}

  async run<T>(
    key: string,
    seq: number,
    name: string,
    fn: (task: TaskContext) => Promise<T> | T,
    options: TaskOptions,
    attemptsBefore: number,
    clock: AttemptClock,
  ): Promise<AttemptOutcome> {
    const maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 1);
    for (let attempt = attemptsBefore + 1; ; attempt++) {
      try {
        const output = await clock.time(() => this.attemptOnce(key, fn, attempt, options.timeoutMs));
        return { ok: true, output: toJson(output), attempts: attempt };
      } catch (error) {
        this.lease.throwIfEnded();
        const nonRetryable = isNonRetryable(error);
        if (nonRetryable || attempt >= maxAttempts || !options.retry) return { ok: false, error: toErrorDetails(error), attempts: attempt, nonRetryable };
        const delayMs = retryDelayMs(options.retry, attempt);
        // A long wait would hold a worker slot: suspend the run and retry when it is due.
        if (delayMs > this.options.inProcessRetryMaxMs) await this.suspendForRetry({ key, seq, name, delayMs, attempts: attempt, clock });
        await abortableDelay(delayMs, this.lease.signal);
      }
    }
  }

  private async attemptOnce<T>(key: string, fn: (task: TaskContext) => Promise<T> | T, attempt: number, timeoutMs?: number): Promise<T> {
    if (timeoutMs === undefined) return fn({ attempt, signal: this.lease.signal });
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([this.lease.signal, timeout]);
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(timeout.aborted ? new TaskTimeoutError(key, timeoutMs) : signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([Promise.resolve().then(() => fn({ attempt, signal })), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
