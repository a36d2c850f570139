import { describe, expect, it } from '@jest/globals';
import { retryDelayMs } from './workflow';

describe('retryDelayMs', () => {
  it('doubles an exponential wait per attempt up to the cap, without jitter when asked', () => {
    const policy = { maxAttempts: 10, delayMs: 100, maxDelayMs: 1_000, jitter: false };
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayMs(policy, attempt))).toEqual([100, 200, 400, 800, 1_000]);
  });

  it('draws an exponential wait at random below the cap by default (full jitter)', () => {
    const policy = { maxAttempts: 10, delayMs: 100 };
    expect(retryDelayMs(policy, 3, () => 0)).toBe(0);
    expect(retryDelayMs(policy, 3, () => 0.5)).toBe(200);
    expect(retryDelayMs(policy, 3, () => 0.999)).toBeLessThanOrEqual(400);
  });

  it('waits the same for a fixed policy', () => {
    const policy = { maxAttempts: 3, backoff: 'fixed' as const, delayMs: 250 };
    expect([1, 2, 7].map((attempt) => retryDelayMs(policy, attempt))).toEqual([250, 250, 250]);
  });
});
