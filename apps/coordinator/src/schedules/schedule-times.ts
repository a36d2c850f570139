import { InvalidRequestError, type ScheduleCatchUp } from '@nest-durable/client';
import { CronTime } from 'cron';

/** When a schedule fires: a cron expression in a time zone, or every `intervalMs`. */
export interface ScheduleTiming {
  cron?: string | null;
  intervalMs?: number | null;
  timezone?: string | null;
}

export const DEFAULT_TIMEZONE = 'UTC';

/**
 * A schedule's fire times (epoch ms), from the `cron` package (the one @nestjs/schedule builds on):
 * 5 fields or 6 with seconds; across a DST change it fires as that package defines (a time that does
 * not exist that day fires at the first one that does; a time that occurs twice fires once).
 */
export class ScheduleTimes {
  private constructor(
    private readonly cron: CronTime | undefined,
    private readonly intervalMs: number | undefined,
    private readonly timezone: string,
  ) {}

  /** Checks a timing as a client gave it: a 400 with the reason of its first problem, nothing stored. */
  static parse(timing: ScheduleTiming, now = Date.now()): ScheduleTimes {
    const { cron, intervalMs } = timing;
    if ((cron == null) === (intervalMs == null)) {
      throw new InvalidRequestError('invalid_schedule', 'give exactly one of cron and intervalMs');
    }
    if (intervalMs != null) {
      if (timing.timezone != null) throw new InvalidRequestError('invalid_timezone', 'timezone applies to a cron schedule, not to intervalMs');
      return new ScheduleTimes(undefined, intervalMs, DEFAULT_TIMEZONE);
    }
    const timezone = timing.timezone ?? DEFAULT_TIMEZONE;
    if (!isTimeZone(timezone)) throw new InvalidRequestError('invalid_timezone', `timezone ${timezone} is not an IANA time zone (e.g. Europe/Berlin)`);
    let parsed: CronTime;
    try {
      parsed = new CronTime(cron!, timezone);
    } catch (error) {
      throw new InvalidRequestError('invalid_cron', `cron ${JSON.stringify(cron)} is not a cron expression (${(error as Error).message})`);
    }
    const times = new ScheduleTimes(parsed, undefined, timezone);
    try {
      times.next(now);
    } catch {
      throw new InvalidRequestError('invalid_cron', `cron ${JSON.stringify(cron)} never fires`);
    }
    return times;
  }

  /** The first fire time after `after`: for an interval, `after` is a fire time (or now, for the first). */
  next(after: number): number {
    if (this.intervalMs !== undefined) return after + this.intervalMs;
    return this.cron!.getNextDateFrom(new Date(Math.floor(after)), this.timezone).toMillis();
  }

  /** The latest fire time in [`from`, `now`], where `from` is a fire time at or before `now`. */
  latest(from: number, now: number): number {
    if (this.intervalMs !== undefined) return from + Math.floor((now - from) / this.intervalMs) * this.intervalMs;
    // next(x) <= now holds for x = from - 1 and not for x = now, and grows with x: the largest x for
    // which it holds gives the latest fire time. A search, not a walk: a cron step costs ~0.2 ms, and
    // an every-second schedule down for a day has 86,400 times to walk.
    // In whole milliseconds (cron fire times are): with a fractional `now` the midpoint could equal `low`
    // and the search would never end.
    let [low, high] = [Math.floor(from) - 1, Math.floor(now)];
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (this.next(middle) <= now) low = middle;
      else high = middle;
    }
    return this.next(low);
  }
}

/** Intl knows every IANA zone (and refuses others); `cron` would fall back on the local zone for some. */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

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
