import type { ClaimedRun } from '@nest-durable/common';

/** Injection token of the worker's subscriber. */
export const SUBSCRIBER = Symbol('SUBSCRIBER');

export type NextDelayParams = { type: 'no_work' } | { type: 'retry'; attempt: number };

/**
 * How a worker finds and takes ready runs. The runtime calls `getReadyRuns` with its free
 * capacity, runs what it gets, and waits `getNextDelay(...)` ms before the next call.
 *
 * A subscriber that blocks inside `getReadyRuns` until work arrives (a long-poll, a blocking
 * Redis read) returns 0 for `no_work`; `retry` (after `getReadyRuns` threw) needs a real backoff.
 */
export interface Subscriber {
  /** For logs and metrics, e.g. 'http', 'redis-zset'. */
  readonly name: string;
  /** Returns runs this worker now owns, at most `limit`. Should return early when `signal` aborts. */
  getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]>;
  getNextDelay(params: NextDelayParams): number;
  /**
   * Called beside the coordinator heartbeat for each run this worker executes; `revision` is the
   * one the run was taken at (the same run may be taken again later at a higher one).
   */
  heartbeat?(runId: string, revision: number): Promise<void>;
  /** Called once a run this subscriber delivered has finished on this worker. */
  acknowledge?(runId: string, revision: number): Promise<void>;
  /** Resolves when the subscriber's dependency answers (used to return from the HTTP backup). */
  probe?(): Promise<void>;
  close?(): Promise<void>;
}

/** A key for one taking of a run: the same run taken again later has a higher revision. */
export function delivery(runId: string, revision: number): string {
  return `${runId}@${revision}`;
}
