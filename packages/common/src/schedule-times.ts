import { DeclaredSchedule, decode } from './contract';
import { InvalidRequestError } from './errors/engine.errors';
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

/** A declared schedule as checked, with its fire times. */
export interface CheckedSchedule {
  schedule: DeclaredSchedule;
  times: ScheduleTimes;
}

/**
 * Checks the schedules declared with a workflow version by the rules the coordinator registers them by
 * (the DeclaredSchedule contract, a cron expression and time zone that parse, exactly one of cron and
 * intervalMs, unique names): an InvalidRequestError with the reason and message of the first problem.
 * `defineWorkflow` calls it too, so a typo fails where the code is loaded rather than refusing every
 * registration of the worker that hosts it.
 */
export function checkDeclaredSchedules(workflow: string, version: string, schedules: readonly unknown[], now = Date.now()): CheckedSchedule[] {
  const checked = schedules.map((declared, index): CheckedSchedule => {
    try {
      const schedule = decode(DeclaredSchedule, declared, `schedules[${index}]`);
      return { schedule, times: ScheduleTimes.parse(schedule, now) };
    } catch (error) {
      if (!(error instanceof InvalidRequestError)) throw error;
      const name = (declared as { name?: unknown } | null)?.name;
      const which = typeof name === 'string' ? `schedule ${name}` : `schedules[${index}]`;
      throw new InvalidRequestError(error.reason, `${workflow} ${version} ${which}: ${error.message}`);
    }
  });
  const names = checked.map(({ schedule }) => schedule.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new InvalidRequestError('invalid_schedules', `${workflow} ${version} declares the schedule ${twice} twice`);
  return checked;
}
