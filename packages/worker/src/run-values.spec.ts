import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { InvalidRequestError } from '@nest-durable/common';
import { RunValues, type RunValuesUpdate } from './run-values';

describe('RunValues', () => {
  let sent: RunValuesUpdate[];
  let replaying: boolean;
  let values: RunValues;

  beforeEach(() => {
    jest.useFakeTimers();
    sent = [];
    replaying = false;
    values = new RunValues({
      progressIntervalMs: 100,
      replaying: () => replaying,
      send: (update) => {
        sent.push(update);
        return true;
      },
      handlerFailed: () => undefined,
    });
  });

  afterEach(() => {
    values.close();
    jest.useRealTimers();
  });

  it('sends what changed at a flush: exposed values and query handlers answers, each once until it changes', () => {
    let stage = 'one';
    values.onQuery('stage', () => stage);
    values.expose('total', 3);
    values.flush();
    values.flush();
    stage = 'two';
    values.expose('total', 3);
    values.flush();

    expect(sent).toEqual([{ exposed: { total: 3, stage: 'one' } }, { exposed: { stage: 'two' } }]);
  });

  it('sends nothing while the execution replays: the latest of each goes at the first flush after it, progress by its timer', () => {
    replaying = true;
    values.expose('stage', 'old');
    values.flush(true);
    values.expose('stage', 'new');
    values.report({ done: 1 });
    jest.advanceTimersByTime(1_000);
    expect(sent).toEqual([]);

    replaying = false;
    values.flush();
    jest.advanceTimersByTime(100);
    expect(sent).toEqual([{ exposed: { stage: 'new' } }, { progress: { done: 1 } }]);
  });

  it('coalesces progress: one value per interval, the last reported, sent by its timer; a final flush sends it at once', () => {
    for (let done = 1; done <= 50; done++) values.report({ done });
    jest.advanceTimersByTime(0);
    expect(sent).toEqual([{ progress: { done: 50 } }]);

    values.report({ done: 51 });
    values.report({ done: 52 });
    values.flush();
    jest.advanceTimersByTime(99);
    expect(sent).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(sent.at(-1)).toEqual({ progress: { done: 52 } });

    values.report({ done: 53 });
    values.flush(true);
    expect(sent.at(-1)).toEqual({ progress: { done: 53 } });
    jest.advanceTimersByTime(1_000);
    expect(sent).toHaveLength(3);
  });

  it('refuses at the call a progress or value too large, a bad name, and a name past the limit', () => {
    expect(() => values.report('x'.repeat(5000))).toThrow(expect.objectContaining({ reason: 'progress_too_large' }));
    expect(() => values.expose('big', 'x'.repeat(70_000))).toThrow(expect.objectContaining({ reason: 'value_too_large' }));
    expect(() => values.expose('no spaces', 1)).toThrow(InvalidRequestError);
    for (let i = 0; i < 100; i++) values.expose(`v${i}`, i);
    expect(() => values.onQuery('one-more', () => 1)).toThrow(expect.objectContaining({ reason: 'too_many_values' }));
    values.expose('v7', 'again');
    expect(sent).toEqual([]);
  });

  it('keeps a failing query handler out of the flush and sends nothing once closed', () => {
    const failed: string[] = [];
    const guarded = new RunValues({
      progressIntervalMs: 100,
      replaying: () => false,
      send: (update) => sent.push(update) > 0,
      handlerFailed: (name) => failed.push(name),
    });
    guarded.onQuery('broken', () => {
      throw new Error('no');
    });
    guarded.expose('fine', true);
    guarded.flush();
    guarded.close();
    guarded.report(1);
    guarded.flush(true);
    jest.advanceTimersByTime(1_000);

    expect(failed).toEqual(['broken']);
    expect(sent).toEqual([{ exposed: { fine: true } }]);
  });
});
