import { describe, expect, it } from '@jest/globals';
import type { StoredTask } from '@nest-durable/common';
import { NonDeterminismError } from '@nest-durable/workflow';
import { StepHistory } from './step-history';

const task = (key: string, seq: number): StoredTask => ({ key, kind: 'task', seq, status: 'completed', attempts: 1, output: key, error: null });
const marker = (id: string, seq: number): StoredTask => ({
  key: `patch:${id}#1`,
  kind: 'patch',
  seq,
  status: 'completed',
  attempts: 1,
  output: null,
  error: null,
});

/** What `run` threw, if anything. */
function divergenceOf(run: () => void): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('StepHistory: patch markers', () => {
  it('on new ground (the history ends before the patch) answers true and asks for the marker at this position', () => {
    const history = new StepHistory([task('a#1', 0)]);
    history.next('task', 'a');
    expect(history.patch('fee')).toEqual({ patched: true, marker: { key: 'patch:fee#1', seq: 1 } });
    // The marker takes its position: the next step comes after it.
    expect(history.next('task', 'fee')).toEqual({ key: 'fee#1', seq: 2, recorded: undefined });
  });

  it('with the marker recorded here answers true, consumes it and asks for nothing: a replay takes the same branch', () => {
    const history = new StepHistory([task('a#1', 0), marker('fee', 1), task('fee#1', 2)]);
    history.next('task', 'a');
    expect(history.patch('fee')).toEqual({ patched: true });
    expect(history.next('task', 'fee').recorded).toEqual(task('fee#1', 2));
  });

  it('with another step recorded here (older code went past this point) answers false and consumes nothing', () => {
    const history = new StepHistory([task('a#1', 0), task('b#1', 1)]);
    history.next('task', 'a');
    expect(history.patch('fee')).toEqual({ patched: false });
    expect(history.next('task', 'b').recorded).toEqual(task('b#1', 1));
  });

  it('answers false when older code recorded the run beyond this position only (a retry wait of its task here)', () => {
    const retry: StoredTask = { key: 'retry:b#1', kind: 'retry', seq: 1, status: 'waiting', attempts: 2, output: null, error: null };
    const history = new StepHistory([task('a#1', 0), retry]);
    history.next('task', 'a');
    expect(history.patch('fee')).toEqual({ patched: false });
  });

  it('decides a patch once per run: a second call answers the same and takes no position', () => {
    const history = new StepHistory([]);
    expect(history.patch('fee')).toEqual({ patched: true, marker: { key: 'patch:fee#1', seq: 0 } });
    expect(history.patch('fee')).toEqual({ patched: true });
    expect(history.next('task', 'a').seq).toBe(1);

    const old = new StepHistory([task('a#1', 0)]);
    expect(old.patch('fee')).toEqual({ patched: false });
    old.next('task', 'a');
    // Past the old history now, yet the run decided already.
    expect(old.patch('fee')).toEqual({ patched: false });
  });

  it('tells two patches apart: each answers by its own marker', () => {
    const history = new StepHistory([marker('second', 0), task('x#1', 1)]);
    expect(history.patch('first')).toEqual({ patched: false });
    expect(history.patch('second')).toEqual({ patched: true });
    expect(history.next('task', 'x').recorded).toEqual(task('x#1', 1));
  });

  it('fails a history whose marker is at another position than the code reaches the patch (the call moved)', () => {
    const history = new StepHistory([task('a#1', 0), marker('fee', 1)]);
    const error = divergenceOf(() => history.patch('fee'));
    expect(error).toBeInstanceOf(NonDeterminismError);
    expect((error as NonDeterminismError).divergence).toEqual({
      seq: 0,
      recorded: { kind: 'task', key: 'a#1' },
      called: { kind: 'patch', key: 'patch:fee#1' },
    });
    expect((divergenceOf(() => new StepHistory([task('a#1', 0), marker('fee', 1)]).deprecatePatch('fee')) as NonDeterminismError).divergence?.seq).toBe(0);
  });

  it('fails a history holding a marker the code no longer reaches as a divergence at its position', () => {
    const history = new StepHistory([task('a#1', 0), marker('fee', 1), task('fee#1', 2)]);
    history.next('task', 'a');
    expect((divergenceOf(() => history.next('task', 'fee')) as NonDeterminismError).divergence).toEqual({
      seq: 1,
      recorded: { kind: 'patch', key: 'patch:fee#1' },
      called: { kind: 'task', key: 'fee#1' },
    });
  });

  it('refuses a patch id a step name could not be', () => {
    expect(() => new StepHistory([]).patch('a:b')).toThrow("without control characters, ':' or '#'");
    expect(() => new StepHistory([]).deprecatePatch('')).toThrow('step name must be 1-200 characters');
  });
});

describe('StepHistory: deprecatePatch', () => {
  it('consumes the marker of a run recorded with it, records nothing for one without: both replay the new branch', () => {
    const withMarker = new StepHistory([marker('fee', 0), task('fee#1', 1)]);
    withMarker.deprecatePatch('fee');
    expect(withMarker.next('task', 'fee').recorded).toEqual(task('fee#1', 1));

    const withoutMarker = new StepHistory([task('fee#1', 0)]);
    withoutMarker.deprecatePatch('fee');
    expect(withoutMarker.next('task', 'fee').recorded).toEqual(task('fee#1', 0));

    const fresh = new StepHistory([]);
    fresh.deprecatePatch('fee');
    expect(fresh.next('task', 'fee')).toEqual({ key: 'fee#1', seq: 0, recorded: undefined });
  });
});

describe('StepHistory.checkEnd', () => {
  it('fails a history holding steps the code returned before, naming the first', () => {
    const history = new StepHistory([task('a#1', 0), task('b#1', 1)]);
    history.next('task', 'a');
    expect((divergenceOf(() => history.checkEnd()) as NonDeterminismError).divergence).toEqual({
      seq: 1,
      recorded: { kind: 'task', key: 'b#1' },
      called: null,
    });
    const done = new StepHistory([task('a#1', 0)]);
    done.next('task', 'a');
    expect(() => done.checkEnd()).not.toThrow();
  });
});

describe('StepHistory: replaying', () => {
  it('is true while recorded steps lie ahead, false from the first new position on', () => {
    const history = new StepHistory([task('a#1', 0), task('b#1', 1)]);
    expect(history.replaying).toBe(true);
    history.next('task', 'a');
    expect(history.replaying).toBe(true);
    history.next('task', 'b');
    expect(history.replaying).toBe(false);
    expect(new StepHistory([]).replaying).toBe(false);
  });
});
