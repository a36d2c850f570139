/**
 * The lease a worker holds on a run, in time, where the coordinator (which takes a claim over once its heartbeat is
 * older than claimMinIdleTimeMs, and requires that to exceed the workers' interval) and the workers (which heartbeat
 * every heartbeatIntervalMs) meet: the defaults of both apps' HEARTBEAT_INTERVAL_MS and CLAIM_MIN_IDLE_TIME_MS and
 * of the worker package's `heartbeatIntervalMs`.
 */
export const LEASE_DEFAULTS = {
  heartbeatIntervalMs: 30_000,
  claimMinIdleTimeMs: 90_000,
} as const;

/**
 * A write under a claim (a task result) refreshes the claim's heartbeat once the last refresh is older than a tenth
 * of the idle time: a run written without pause stays leased by its writes (a heartbeat skips a run a write holds
 * locked), while a refresh on every write would make a new version of the run's row (and its index entries) per
 * step (docs/benchmarks.md).
 */
export function heartbeatRefreshAfterMs(claimMinIdleTimeMs: number): number {
  return claimMinIdleTimeMs / 10;
}
