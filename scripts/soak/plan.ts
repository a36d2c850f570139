import type { SoakInput } from '../../test/fixtures/soak.workflow';

export interface PlannedRun {
  /** The run's idempotency key: a start retried after a lost answer gets the same run. */
  key: string;
  input: SoakInput;
  /** When to start it, in ms after the load began. */
  atMs: number;
}

/** mulberry32: a small seeded generator, so a soak can be repeated with the same inputs and victims. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Steps this long or longer make a long run. */
export const LONG_STEP_MS = 1_000;

/**
 * `runs` runs, `rate` a second: mostly 3 to 7 steps of 10 to 60 ms, 30% with a durable sleep of 200
 * to 500 ms; and 2% long ones, 2 or 3 steps of 3.5 to 5 s (longer than the idle time, so only
 * heartbeats keep them; and still running when a stopped worker wakes up, so that its writes meet
 * a newer claim).
 */
export function planRuns(prefix: string, runs: number, rate: number, seed: number): PlannedRun[] {
  const next = random(seed);
  const int = (below: number) => Math.floor(next() * below);
  const input = () =>
    next() < 0.02
      ? { seed: int(2 ** 31), steps: 2 + int(2), stepMs: 3_500 + int(1_501), sleepMs: 0 }
      : { seed: int(2 ** 31), steps: 3 + int(5), stepMs: 10 + int(51), sleepMs: next() < 0.3 ? 200 + int(301) : 0 };
  return Array.from({ length: runs }, (_, i) => ({ key: `${prefix}-${i}`, input: input(), atMs: (i * 1000) / rate }));
}
