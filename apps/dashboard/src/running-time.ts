import type { RunTransition } from '@nest-durable/common';

/**
 * How long a run ran: the time it spent `running` (held by a worker), summed over its transitions (oldest first), so
 * not the waits between its attempts, its sleeps, event waits and child waits, nor its time queued. From its first
 * start to its end a run that was retried 3 times after a minute each ran for seconds, not minutes. A run running
 * now counts up to `now`; with `complete` false (the list of transitions was cut short) the last one listed is not
 * the last, and what follows it is not counted.
 */
export function runningMs(transitions: readonly RunTransition[], { complete = true, now = Date.now() } = {}): number {
  let total = 0;
  let runningSince: number | undefined;
  for (const transition of transitions) {
    const at = Date.parse(transition.at);
    if (runningSince !== undefined) total += at - runningSince;
    runningSince = transition.to === 'running' ? at : undefined;
  }
  if (runningSince !== undefined && complete) total += now - runningSince;
  return total;
}
