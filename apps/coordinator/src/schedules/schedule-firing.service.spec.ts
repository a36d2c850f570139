import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { DueTimers } from '../timers/due-timers.service';
import { ScheduleFiring } from './schedule-firing.service';
import type { FiringOutcome, SchedulesService } from './schedules.service';

describe('ScheduleFiring', () => {
  let failing = true;
  let firings: number[];
  let announce: (ids: string[]) => void;
  let warnings: jest.Mock;
  let firing: ScheduleFiring;

  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
    failing = true;
    firings = [];
    const timers = {
      onSchedulesDue: (handler: (ids: string[]) => void) => {
        announce = handler;
        return () => undefined;
      },
    } as unknown as DueTimers;
    const schedules = {
      fire: async (): Promise<FiringOutcome> => {
        firings.push(Date.now());
        if (failing) throw new Error('permission denied for table runs');
        return 'fired';
      },
    } as unknown as SchedulesService;
    firing = new ScheduleFiring(timers, schedules);
    warnings = jest.fn();
    (firing as unknown as { logger: { warn: unknown } }).logger.warn = warnings;
    firing.onApplicationBootstrap();
  });

  afterEach(async () => {
    await firing.beforeApplicationShutdown();
    jest.useRealTimers();
  });

  it('backs off a schedule whose firing keeps failing, doubling the wait up to a minute, and starts over after one succeeds', async () => {
    announce(['s']);
    await jest.advanceTimersByTimeAsync(200_000);
    expect(firings).toEqual([0, 1_000, 3_000, 7_000, 15_000, 31_000, 63_000, 123_000, 183_000]);
    expect(warnings).toHaveBeenCalledTimes(firings.length);
    expect(warnings).toHaveBeenLastCalledWith(expect.stringContaining('trying again in 60000 ms'));
    // The due timers announcing it again while it waits do not cut the wait short.
    announce(['s']);
    await jest.advanceTimersByTimeAsync(0);
    expect(firings).toHaveLength(9);
    failing = false;
    await jest.advanceTimersByTimeAsync(43_000); // to 243 s
    expect(firings.at(-1)).toBe(243_000);
    await jest.advanceTimersByTimeAsync(7_000);
    failing = true;
    announce(['s']);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(firings.slice(-3)).toEqual([243_000, 250_000, 251_000]);
  });
});
