import { describe, expect, it } from '@jest/globals';
import type { StoredTask } from '@nest-durable/common';
import { InvalidStepError } from '@nest-durable/workflow';
import { StepHistory } from './step-history';
import { UpdateHandlers } from './update-handlers';

const sleep: StoredTask = { key: 'sleep:nap#1', kind: 'sleep', seq: 0, status: 'completed', attempts: 1, output: null, error: null };
const update = (name: string, n: number, input: string): StoredTask => ({
  key: `update:${name}#${n}`,
  kind: 'update',
  seq: 0,
  status: 'completed',
  attempts: 1,
  output: { updateId: `u${n}`, input, output: n },
  error: null,
});

describe('StepHistory: update steps', () => {
  it('keeps the updates of a wait apart from its positions, in the order they were applied, and numbers the next after them', () => {
    // Recorded as jsonb returns them: by key, where #10 sorts before #2.
    const history = new StepHistory([sleep, update('add', 10, 'j'), update('add', 2, 'b'), update('add', 1, 'a')]);
    expect(history.next('sleep', 'nap')).toMatchObject({ seq: 0, recorded: sleep });
    expect(history.updatesAt(0).map((step) => step.key)).toEqual(['update:add#1', 'update:add#2', 'update:add#10']);
    expect(history.updatesAt(1)).toEqual([]);
    expect(history.nextUpdateKey('add')).toBe('update:add#4');
    expect(() => history.checkEnd()).not.toThrow();
  });
});

describe('UpdateHandlers', () => {
  it('registers handlers of declared updates only', () => {
    const handlers = new UpdateHandlers(new Set(['add']));
    expect(() => handlers.register('remove', () => 1)).toThrow(InvalidStepError);
    expect(() => handlers.register('remove', () => 1)).toThrow('it declares add');
    expect(() => handlers.register('add', 'no' as never)).toThrow(InvalidStepError);
  });

  it('applies pending updates in order: the answer, what the handler threw, or not handled', async () => {
    const items: string[] = [];
    const handlers = new UpdateHandlers(new Set(['add', 'note']));
    handlers.register('add', async (sku) => {
      if (sku === 'bad') throw new Error('out of stock');
      if ((sku as string).length > 100) return sku; // an answer over the coordinator's limit
      return items.push(sku as string);
    });
    let n = 0;
    const applied = await handlers.apply(
      [
        { id: 'a', name: 'add', input: 'x' },
        { id: 'b', name: 'add', input: 'bad' },
        { id: 'c', name: 'note', input: null },
        { id: 'd', name: 'add', input: 'y' },
        { id: 'e', name: 'add', input: 'x'.repeat(2_000_000) },
      ],
      (name) => `update:${name}#${++n}`,
    );
    expect(applied).toEqual([
      { id: 'a', key: 'update:add#1', status: 'completed', output: 1 },
      { id: 'b', key: 'update:add#2', status: 'failed', error: expect.objectContaining({ name: 'Error', message: 'out of stock' }) },
      { id: 'c', key: 'update:note#3', status: 'failed', error: expect.objectContaining({ name: 'UpdateNotHandled' }) },
      { id: 'd', key: 'update:add#4', status: 'completed', output: 2 },
      // An answer the coordinator would refuse fails the update, not the record (nor the run).
      {
        id: 'e',
        key: 'update:add#5',
        status: 'failed',
        error: expect.objectContaining({ name: 'InvalidRequestError', message: expect.stringContaining('the answer of update add is') }),
      },
    ]);
    expect(items).toEqual(['x', 'y']);
  });

  it('replays recorded updates with their inputs, and refuses a step inside a handler', async () => {
    const handlers = new UpdateHandlers(new Set(['add']));
    const seen: unknown[] = [];
    let refused: unknown;
    handlers.register('add', (input) => {
      seen.push(input);
      try {
        handlers.checkNoStep();
      } catch (error) {
        refused = error;
      }
    });
    await handlers.replay([update('add', 1, 'a'), update('add', 2, 'b')]);
    expect(seen).toEqual(['a', 'b']);
    expect(refused).toBeInstanceOf(InvalidStepError);
    expect(() => handlers.checkNoStep()).not.toThrow();
  });
});
