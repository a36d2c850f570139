import type { FaultKind, InjectedFault } from './faults';
import type { RunRow, TransitionRow } from './state';

/** How long the engine took to recover from one fault, in ms (undefined: nothing to measure). */
export interface Recovery {
  fault: InjectedFault;
  /**
   * The runs it hit: for a worker fault, those the worker held; otherwise the short runs in
   * flight (a long run's own steps would hide the recovery time).
   */
  affected: number;
  /** Worker faults: until the last of its runs was claimed by another worker. */
  takenOverMs?: number;
  /** Other faults: until the last of the short runs in flight finished (they take under a second unhindered). */
  inFlightDoneMs?: number;
  /** Other faults: until finishing runs were back to 75% of the start rate over a whole second. */
  throughputBackMs?: number;
}

const WORKER_FAULTS = new Set<FaultKind>(['kill-worker', 'sigstop-worker']);

/**
 * Recovery times, from the runs' own finish times and claim history in the database (the same
 * host's clock as the soak's fault times). `longRuns` are the ids of runs with long steps.
 */
export function measureRecovery(
  faults: InjectedFault[],
  runs: RunRow[],
  transitions: Map<string, TransitionRow[]>,
  startRate: number,
  longRuns: Set<string>,
): Recovery[] {
  const finishes = runs.map((run) => run.finishedAt ?? Infinity).sort((a, b) => a - b);
  const unfinishedAt = (run: RunRow, at: number) => (run.finishedAt ?? Infinity) > at;
  return faults.map((fault) => {
    if (WORKER_FAULTS.has(fault.kind)) {
      // A write the worker sent just before the fault may still finish or suspend a run: that run needed no takeover.
      const held = runs.filter((run) => {
        const history = transitions.get(run.id) ?? [];
        const next = history.find((t) => t.at > fault.at);
        return unfinishedAt(run, fault.at) && heldBy(history, fault.target!, fault.at) && (!next || next.to === 'running');
      });
      const takeovers = held.map((run) => (transitions.get(run.id) ?? []).find((t) => t.at > fault.at)?.at ?? Infinity);
      return { fault, affected: held.length, takenOverMs: held.length > 0 ? Math.max(...takeovers) - fault.at : undefined };
    }
    const inFlight = runs.filter((run) => !longRuns.has(run.id) && run.createdAt <= fault.at && unfinishedAt(run, fault.at));
    return {
      fault,
      affected: inFlight.length,
      inFlightDoneMs: inFlight.length > 0 ? Math.max(...inFlight.map((run) => run.finishedAt ?? Infinity)) - fault.at : undefined,
      throughputBackMs: throughputBack(finishes, fault.at, startRate),
    };
  });
}

/** Whether `worker` held the run at `at`: its last transition by then was that worker's claim. */
function heldBy(transitions: TransitionRow[], worker: string, at: number): boolean {
  const before = transitions.filter((transition) => transition.at <= at).at(-1);
  return before?.to === 'running' && before.workerId === worker;
}

/** From `at`, the start of the first one-second window (stepping 100 ms) in which ≥ 75% of the start rate finished. */
function throughputBack(finishes: number[], at: number, startRate: number): number | undefined {
  const needed = Math.max(1, Math.floor(0.75 * startRate));
  for (let from = at; from < at + 120_000; from += 100) {
    const count = countBetween(finishes, from, from + 1_000);
    if (count >= needed) return from - at;
    if (from > finishes[finishes.length - 1]) return undefined;
  }
  return undefined;
}

function countBetween(sorted: number[], from: number, to: number): number {
  return lowerBound(sorted, to) - lowerBound(sorted, from);
}

function lowerBound(sorted: number[], value: number): number {
  let [low, high] = [0, sorted.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle] < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Runs taken over from a worker the soak had neither killed nor stopped: its claim went idle
 * anyway. `total`, and `unexplained`: those not within 10 s after a fault of the coordinator, the
 * database or Redis (which can hold heartbeats up past the idle time).
 */
export function liveTakeovers(transitions: Map<string, TransitionRow[]>, faults: InjectedFault[], stopMs: number): { total: number; unexplained: number } {
  const ended = new Map<string, { from: number; to: number }[]>();
  for (const fault of faults) {
    if (!WORKER_FAULTS.has(fault.kind)) continue;
    // A stopped worker's claims go idle while it is stopped and are taken a little after.
    const window = { from: fault.at, to: fault.kind === 'kill-worker' ? Infinity : fault.at + stopMs + 5_000 };
    ended.set(fault.target!, [...(ended.get(fault.target!) ?? []), window]);
  }
  const outages = faults.filter((fault) => !WORKER_FAULTS.has(fault.kind)).map((fault) => ({ from: fault.at, to: fault.at + (fault.downMs ?? 0) + 10_000 }));
  const result = { total: 0, unexplained: 0 };
  for (const history of transitions.values()) {
    for (let i = 1; i < history.length; i++) {
      const [previous, current] = [history[i - 1], history[i]];
      if (previous.to !== 'running' || current.to !== 'running') continue;
      if (ended.get(previous.workerId ?? '')?.some((window) => current.at >= window.from && current.at <= window.to)) continue;
      result.total++;
      if (!outages.some((outage) => current.at >= outage.from && current.at <= outage.to)) result.unexplained++;
    }
  }
  return result;
}
