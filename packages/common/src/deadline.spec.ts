import { describe, expect, it } from '@jest/globals';
import { settleWithin } from './deadline';

describe('settleWithin', () => {
  it("answers with the promise's outcome when it settles in time", async () => {
    await expect(settleWithin(Promise.resolve('ok'), 1_000, () => new Error('late'))).resolves.toBe('ok');
    await expect(settleWithin(Promise.reject(new Error('failed')), 1_000, () => new Error('late'))).rejects.toThrow('failed');
  });

  it("throws late()'s error when the promise has not settled by then", async () => {
    await expect(settleWithin(new Promise(() => undefined), 10, () => new RangeError('no answer in 10 ms'))).rejects.toThrow(RangeError);
  });
});
