import { describe, expect, it } from '@jest/globals';
import type { StoredTask } from '@nest-durable/common';
import { CompletionFailedError, CompletionTimeoutError } from '@nest-durable/workflow';
import { externalResultOf, LazyResult, waitKeyOf } from './external-completion';
import { StepHistory } from './step-history';

const step = (key: string, kind: StoredTask['kind'], seq: number, output: StoredTask['output']): StoredTask => ({
  key,
  kind,
  seq,
  status: 'completed',
  attempts: 1,
  output,
  error: null,
});

describe('completion tokens on the worker', () => {
  it('LazyResult starts its step at the first await only, and once however often it is awaited', async () => {
    let started = 0;
    const result = new LazyResult('pay', 'external:pay#1', async () => ++started);
    await Promise.resolve();
    expect(started).toBe(0);
    expect(result).toMatchObject({ kind: 'external', name: 'pay', key: 'external:pay#1' });
    expect(started).toBe(0);
    expect(await result).toBe(1);
    expect(await result).toBe(1);
    await expect(Promise.all([result, result])).resolves.toEqual([1, 1]);
    expect(started).toBe(1);
  });

  it('externalResultOf answers the data, or throws what the outside system said or the timeout', () => {
    expect(externalResultOf(step('external:pay#1', 'external', 2, { timedOut: false, status: 'completed', data: { paid: true } }))).toEqual({ paid: true });

    const failed = step('external:pay#1', 'external', 2, {
      timedOut: false,
      status: 'failed',
      error: { name: 'Declined', message: 'no funds', data: { code: 51 } },
    });
    expect(() => externalResultOf(failed)).toThrow(CompletionFailedError);
    try {
      externalResultOf(failed);
    } catch (error) {
      expect(error).toMatchObject({ reason: 'completion_failed', details: { name: 'Declined', message: 'no funds', data: { code: 51 } } });
    }
    expect(() => externalResultOf(step('external:pay#1', 'external', 2, { timedOut: true }))).toThrow(CompletionTimeoutError);
  });

  it("pairs each wait with its token's key, whatever order the tokens are awaited in", () => {
    const history = new StepHistory([
      step('token:pay#1', 'token', 0, { token: 'first' }),
      step('token:pay#2', 'token', 1, { token: 'second' }),
      step('external:pay#2', 'external', 2, { timedOut: true }),
    ]);
    const first = history.next('token', 'pay');
    const second = history.next('token', 'pay');
    expect([first.recorded?.output, second.recorded?.output]).toEqual([{ token: 'first' }, { token: 'second' }]);
    // The second token is awaited first: its wait is external:pay#2, not the first wait called pay.
    expect(history.next('external', 'pay', waitKeyOf(second.key))).toMatchObject({ key: 'external:pay#2', seq: 2, recorded: { output: { timedOut: true } } });
    expect(history.next('external', 'pay', waitKeyOf(first.key))).toEqual({ key: 'external:pay#1', seq: 3, recorded: undefined });
  });
});
