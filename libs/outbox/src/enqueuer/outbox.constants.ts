/** NOTIFY channel of the outbox trigger (one notification per committing transaction). */
export const OUTBOX_CHANNEL = 'wf_outbox';

export const OUTBOX_OPTIONS = Symbol('OUTBOX_OPTIONS');

export interface OutboxOptions {
  /** Fallback poll, and how retries that came due are found. */
  pollIntervalMs: number;
  batchSize: number;
  /** Batches processed at once. */
  concurrency: number;
  /** Publish attempts before a row is dead-lettered. */
  maxRetries: number;
  /** First retry waits up to this; each further retry doubles the cap (full jitter). */
  retryBaseMs: number;
  retryMaxMs: number;
  /** An in_flight row older than this was left by a dead enqueuer and is retried. */
  staleInFlightMs: number;
  maintenanceIntervalMs: number;
}

export const DEFAULT_OUTBOX_OPTIONS: OutboxOptions = {
  pollIntervalMs: 1_000,
  batchSize: 100,
  concurrency: 2,
  maxRetries: 10,
  retryBaseMs: 500,
  retryMaxMs: 60_000,
  staleInFlightMs: 30_000,
  maintenanceIntervalMs: 5_000,
};
