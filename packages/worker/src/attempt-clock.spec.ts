import { describe, expect, it, jest } from '@jest/globals';
import { ATTEMPT_TIMES_MAX } from '@nest-durable/common';
import { AttemptClock } from './attempt-clock';

describe('AttemptClock', () => {
  it("times each attempt from the first attempt's start, whether it succeeded or threw", async () => {
    let now = 1_000;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      const clock = new AttemptClock();
      now += 5; // before the first attempt (a span, the retry's bookkeeping): not the task's time
      await expect(
        clock.time(async () => {
          now += 20;
          throw new Error('declined');
        }),
      ).rejects.toThrow('declined');
      now += 100; // the wait before the next attempt
      expect(
        await clock.time(async () => {
          now += 30.4;
          return 'ok';
        }),
      ).toBe('ok');
      expect(clock.attemptTimes()).toEqual([
        { offsetMs: 0, durationMs: 20 },
        { offsetMs: 120, durationMs: 30 },
      ]);
      expect(clock.elapsedMs()).toBe(150);
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('keeps the last attempts only, and reports none for an execution of one attempt', async () => {
    const clock = new AttemptClock();
    await clock.time(async () => undefined);
    expect(clock.attemptTimes()).toBeUndefined();
    for (let i = 1; i < ATTEMPT_TIMES_MAX + 5; i++) await clock.time(async () => undefined).catch(() => undefined);
    expect(clock.attemptTimes()).toHaveLength(ATTEMPT_TIMES_MAX);
  });
});
