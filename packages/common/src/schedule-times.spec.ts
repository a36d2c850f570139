import { describe, expect, it } from '@jest/globals';
import { ScheduleTimes } from './schedule-times';

const at = (iso: string) => new Date(iso).getTime();
const iso = (ms: number) => new Date(ms).toISOString();

describe('ScheduleTimes', () => {
  it('reads cron with seconds, in a time zone, across DST as the cron package defines it', () => {
    const everyTwoSeconds = ScheduleTimes.parse({ cron: '*/2 * * * * *' });
    expect(iso(everyTwoSeconds.next(at('2026-10-25T00:30:00.500Z')))).toBe('2026-10-25T00:30:02.000Z');
    const newYork = ScheduleTimes.parse({ cron: '0 30 9 * * 1-5', timezone: 'America/New_York' });
    // Friday 4 December 2026, 15:00 UTC is 10:00 in New York: next is Monday 09:30 EST (UTC-5).
    expect(iso(newYork.next(at('2026-12-04T15:00:00Z')))).toBe('2026-12-07T14:30:00.000Z');
    const berlin = ScheduleTimes.parse({ cron: '0 30 2 * * *', timezone: 'Europe/Berlin' });
    // 29 March 2026 has no 02:30 in Berlin (clocks jump from 02:00 to 03:00): it fires at 03:00 CEST.
    expect(iso(berlin.next(at('2026-03-28T12:00:00Z')))).toBe('2026-03-29T01:00:00.000Z');
    // 25 October 2026 has 02:30 twice (CEST, then CET): it fires once, at the first.
    expect(iso(berlin.next(at('2026-10-24T12:00:00Z')))).toBe('2026-10-25T00:30:00.000Z');
    expect(iso(berlin.next(at('2026-10-25T00:30:00Z')))).toBe('2026-10-26T01:30:00.000Z');
  });

  it('refuses what it cannot fire, with a reason', () => {
    const reason = (timing: Parameters<typeof ScheduleTimes.parse>[0]) => {
      try {
        ScheduleTimes.parse(timing);
        return 'accepted';
      } catch (error) {
        return (error as { reason: string }).reason;
      }
    };
    expect(reason({ cron: '61 * * * *' })).toBe('invalid_cron');
    expect(reason({ cron: 'every day' })).toBe('invalid_cron');
    expect(reason({ cron: '0 0 31 2 *' })).toBe('invalid_cron'); // 31 February: never
    expect(reason({ cron: '* * * * *', timezone: 'Mars/Olympus_Mons' })).toBe('invalid_timezone');
    expect(reason({ intervalMs: 1_000, timezone: 'UTC' })).toBe('invalid_timezone');
    expect(reason({ cron: '* * * * *', intervalMs: 1_000 })).toBe('invalid_schedule');
    expect(reason({})).toBe('invalid_schedule');
    expect(reason({ cron: '* * * * *', timezone: 'Asia/Kolkata' })).toBe('accepted');
  });

  it('finds the latest fire time by search, as walking would', () => {
    const hourly = ScheduleTimes.parse({ cron: '0 0 * * * *' });
    const from = at('2026-01-01T00:00:00Z');
    expect(iso(hourly.latest(from, at('2026-01-03T05:59:59.999Z')))).toBe('2026-01-03T05:00:00.000Z');
    expect(iso(hourly.latest(from, at('2026-01-03T06:00:00Z')))).toBe('2026-01-03T06:00:00.000Z');
    expect(iso(hourly.latest(from, from))).toBe(iso(from));
    // The database clock has microseconds: a `now` just after a fire time, with a fraction, ends the search.
    expect(iso(ScheduleTimes.parse({ cron: '* * * * * *' }).latest(from, from + 0.5))).toBe(iso(from));
    expect(iso(hourly.latest(from, from + 3_600_000.25))).toBe('2026-01-01T01:00:00.000Z');
    const interval = ScheduleTimes.parse({ intervalMs: 300 });
    expect(interval.latest(1_000, 2_099)).toBe(1_900);
  });
});
