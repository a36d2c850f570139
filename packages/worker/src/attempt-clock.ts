import { ATTEMPT_TIMES_MAX, type AttemptTime, TASK_DURATION_MS_MAX } from '@nest-durable/common';

/**
 * Times one execution of a task and each of its attempts on the monotonic clock, so that the coordinator dates
 * them from its own clock (the first attempt's start as `durationMs` before the result's commit, each attempt's start
 * at its offset from there): the worker's wall clock never matters. Keeps the last ATTEMPT_TIMES_MAX attempts.
 */
export class AttemptClock {
  /** The first attempt's start: the task's own (what ran before it, a span or a retry's bookkeeping, is not the task's). */
  private began: number | undefined;
  private readonly times: AttemptTime[] = [];

  /** Runs one attempt and records when it began and how long it took, whether it succeeded or threw. */
  async time<T>(attempt: () => Promise<T>): Promise<T> {
    const started = performance.now();
    this.began ??= started;
    try {
      return await attempt();
    } finally {
      if (this.times.length === ATTEMPT_TIMES_MAX) this.times.shift();
      this.times.push({ offsetMs: capped(started - (this.began ?? started)), durationMs: capped(performance.now() - started) });
    }
  }

  /** From the execution's start until now (the attempts and the in-process waits between them). */
  elapsedMs(): number {
    const now = performance.now();
    return capped(now - (this.began ?? now));
  }

  /** Every attempt timed so far, oldest first (an execution that suspends for a retry wait sends them with it). */
  timesSoFar(): AttemptTime[] {
    return [...this.times];
  }

  /**
   * The attempts timed, oldest first; none for an execution of one attempt (the report then has no `attemptTimes`):
   * that attempt is the task's own start and duration, so the common case sends and stores nothing more.
   */
  attemptTimes(): AttemptTime[] | undefined {
    return this.times.length > 1 ? [...this.times] : undefined;
  }
}

/** Whole milliseconds, within the contract's bound (a task that runs longer than a day is still recorded). */
function capped(ms: number): number {
  return Math.min(Math.max(Math.round(ms), 0), TASK_DURATION_MS_MAX);
}
