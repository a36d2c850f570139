import { describe, expect, it } from '@jest/globals';
import { defineWorkflow, retryDelayMs, type WorkflowLimits } from './workflow';

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

describe('defineWorkflow limits', () => {
  const define = (limits: WorkflowLimits) => defineWorkflow({ name: 'w', version: '1', limits, handler: async () => null });

  it('keeps limits in range, frozen', () => {
    const workflow = define({ concurrency: 2, concurrencyPerKey: 1, ratePerSecond: 0.5, ratePerKeyPerSecond: 0.25 });
    expect(workflow.limits).toEqual({ concurrency: 2, concurrencyPerKey: 1, ratePerSecond: 0.5, ratePerKeyPerSecond: 0.25 });
    expect(Object.isFrozen(workflow.limits)).toBe(true);
  });

  it('refuses limits the coordinator would refuse, naming the field', () => {
    expect(() => define({ concurrency: 0 })).toThrow('workflow w: limits.concurrency must be an integer from 1 to 100000');
    expect(() => define({ concurrencyPerKey: 1.5 })).toThrow('limits.concurrencyPerKey must be an integer');
    expect(() => define({ ratePerSecond: -1 })).toThrow('limits.ratePerSecond must be a number above 0');
    expect(() => define({ ratePerKeyPerSecond: 0 })).toThrow('limits.ratePerKeyPerSecond must be a number above 0');
    expect(() => define({ rate: 5 } as WorkflowLimits)).toThrow('workflow w: limits.rate is not a limit');
  });
});
