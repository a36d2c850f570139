import { describe, expect, it } from '@jest/globals';
import { ScheduleTimes } from '@nest-durable/common';
import { CATCH_UP_BATCH, planFiring } from './schedule-times';

describe('planFiring', () => {
  const everySecond = ScheduleTimes.parse({ intervalMs: 1_000 });
  const graceMs = 500;

  it('acts on every fire time that passed (all), in batches', () => {
    expect(planFiring(everySecond, 10_000, 13_200, 'all', graceMs)).toEqual({ fireTimes: [10_000, 11_000, 12_000, 13_000], nextRunAt: 14_000 });
    const long = planFiring(everySecond, 0, 1_000_000, 'all', graceMs);
    expect(long.fireTimes).toHaveLength(CATCH_UP_BATCH);
    expect(long.nextRunAt).toBe(CATCH_UP_BATCH * 1_000);
  });

  it('acts on the latest only (latest), and for none only if it is within the grace', () => {
    expect(planFiring(everySecond, 10_000, 13_200, 'latest', graceMs)).toEqual({ fireTimes: [13_000], nextRunAt: 14_000 });
    expect(planFiring(everySecond, 10_000, 13_200, 'none', graceMs)).toEqual({ fireTimes: [13_000], nextRunAt: 14_000 });
    expect(planFiring(everySecond, 10_000, 13_700, 'none', graceMs)).toEqual({ fireTimes: [], nextRunAt: 14_000 });
    // On time, each policy fires the one fire time.
    for (const catchUp of ['none', 'latest', 'all'] as const) expect(planFiring(everySecond, 10_000, 10_020, catchUp, graceMs).fireTimes).toEqual([10_000]);
  });
});
