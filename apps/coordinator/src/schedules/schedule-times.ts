import type { ScheduleCatchUp, ScheduleTimes } from '@nest-durable/common';

/** The fire times a firing acts on (soonest first), and the schedule's next fire time after them. */
export interface FiringPlan {
  fireTimes: number[];
  nextRunAt: number;
}

/** At most this many fire times a firing acts on (catchUp `all`); the rest follow in the next, at once. */
export const CATCH_UP_BATCH = 100;

/**
 * The fire times a firing acts on, of those due from `nextRunAt` (the first not acted on) to `now`, and
 * the schedule's next fire time after them: every one (`all`, in batches); or only the latest, for
 * `latest`, and for `none` only if it is no more than `graceMs` late (a time later than that was
 * missed: no coordinator could fire it when it came).
 */
export function planFiring(times: ScheduleTimes, nextRunAt: number, now: number, catchUp: ScheduleCatchUp, graceMs: number): FiringPlan {
  if (catchUp === 'all') {
    const fireTimes: number[] = [];
    let at = nextRunAt;
    while (at <= now && fireTimes.length < CATCH_UP_BATCH) {
      fireTimes.push(at);
      at = times.next(at);
    }
    return { fireTimes, nextRunAt: at };
  }
  const latest = times.latest(nextRunAt, now);
  const fire = catchUp === 'latest' || now - latest <= graceMs;
  return { fireTimes: fire ? [latest] : [], nextRunAt: times.next(latest) };
}
