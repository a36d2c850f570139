import { describe, expect, it } from '@jest/globals';
import type { StoredTask } from '@nest-durable/common';
import {
  branch,
  ChildRunFailedError,
  CompletionFailedError,
  CompletionTimeoutError,
  InvalidStepError,
  NonDeterminismError,
  TaskFailedError,
} from '@nest-durable/workflow';
import { LazyResult } from './external-completion';
import { checkBranches, groupResultOf } from './wait-groups';

const step = (
  key: string,
  kind: StoredTask['kind'],
  output: unknown,
  status: StoredTask['status'] = 'completed',
  error: StoredTask['error'] = null,
): StoredTask => ({ key, kind, seq: 3, status, attempts: 1, output, error }) as StoredTask;

const branches = [
  branch.event('paid', { match: { orderId: 'o-1' } }),
  branch.sleep(1_000),
  branch.task(() => 'x'),
  branch.child({ name: 'bill', version: '1' }, 1),
];
/** `ctx.awaitExternal`'s result, as a branch (never awaited here). */
const payment = new LazyResult<{ paid: number }>('pay', 'external:pay#1', () => Promise.reject(new Error('not awaited')));
const recorded = new Map<number, StoredTask>([
  [0, step('group:g#1/0', 'event', { timedOut: false, data: { orderId: 'o-1' } })],
  [1, step('group:g#1/1', 'sleep', null)],
  [2, step('group:g#1/2', 'task', 'computed')],
  [3, step('group:g#1/3', 'child', { timedOut: false, childId: 'c', status: 'completed', output: 42, error: null })],
]);

describe('wait groups as executions and replays read them (wait-groups.ts)', () => {
  it('any: the recorded winner and its value; all: every value in order', () => {
    expect(groupResultOf('any', step('group:g#1', 'group', { mode: 'any', index: 0 }), branches, (i) => recorded.get(i))).toEqual({
      index: 0,
      value: { orderId: 'o-1' },
    });
    expect(groupResultOf('any', step('group:g#1', 'group', { mode: 'any', index: 1 }), branches, (i) => recorded.get(i))).toEqual({ index: 1, value: null });
    expect(groupResultOf('all', step('group:g#1', 'group', { mode: 'all' }), branches, (i) => recorded.get(i))).toEqual([
      { orderId: 'o-1' },
      null,
      'computed',
      42,
    ]);
  });

  it('throws a failed task or child as ctx.task and ctx.child do (in all, the first in the list)', () => {
    const failed = new Map(recorded);
    failed.set(2, step('group:g#1/2', 'task', null, 'failed', { name: 'Error', message: 'boom' }));
    failed.set(3, step('group:g#1/3', 'child', { timedOut: false, childId: 'c', status: 'failed', output: null, error: { name: 'Error', message: 'no' } }));
    expect(() => groupResultOf('all', step('group:g#1', 'group', { mode: 'all' }), branches, (i) => failed.get(i))).toThrow(TaskFailedError);
    expect(() => groupResultOf('any', step('group:g#1', 'group', { mode: 'any', index: 3 }), branches, (i) => failed.get(i))).toThrow(ChildRunFailedError);
  });

  it('a group recorded by the other mode, or a branch recorded as another kind, is a divergence', () => {
    expect(() => groupResultOf('all', step('group:g#1', 'group', { mode: 'any', index: 0 }), branches, (i) => recorded.get(i))).toThrow(NonDeterminismError);
    const swapped = [branch.sleep(5), ...branches.slice(1)];
    expect(() => groupResultOf('any', step('group:g#1', 'group', { mode: 'any', index: 0 }), swapped, (i) => recorded.get(i))).toThrow(
      'branch 0 of group "group:g#1" was recorded as a step of kind event; the code now has a branch of kind sleep there',
    );
  });

  it("a completion token's result: its data, or its failure or timeout thrown as `await result` throws it", () => {
    const group = step('group:t#1', 'group', { mode: 'any', index: 0 });
    const outcome = (output: unknown) => () => step('group:t#1/0', 'external', output);
    expect(groupResultOf('any', group, [payment], outcome({ timedOut: false, status: 'completed', data: { paid: 5 } }))).toEqual({
      index: 0,
      value: { paid: 5 },
    });
    const declined = outcome({ timedOut: false, status: 'failed', error: { name: 'Declined', message: 'no', data: null } });
    expect(() => groupResultOf('any', group, [payment], declined)).toThrow(CompletionFailedError);
    expect(() => groupResultOf('any', group, [payment], outcome({ timedOut: true }))).toThrow(CompletionTimeoutError);
  });

  it.each([
    ['no branch', [], 'a list of 1 to 32 branches'],
    ['something else', [{ kind: 'wait' }], 'branch 0 is not a branch'],
    ['a malformed match', [branch.event('paid', { match: { 'a.': 1 } })], 'branch 0: match field "a."'],
    ['a negative sleep', [branch.sleep(-5)], 'branch 0: sleep duration must be an integer'],
    ['a task without a function', [{ kind: 'task' }], 'branch 0: a task branch needs a function'],
    ['one token result twice', [payment, payment], "branch 1: a completion token's result is a branch once"],
  ])('refuses %s before anything is sent', (_, given, message) => {
    expect(() => checkBranches(given as never)).toThrow(InvalidStepError);
    expect(() => checkBranches(given as never)).toThrow(message);
  });
});
