import { describe, expect, it } from '@jest/globals';
import type { RunTransition } from '@nest-durable/common';
import { runningMs } from './running-time';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
/** A transition `ms` after T0. */
const to = (status: RunTransition['to'], ms: number, from: RunTransition['from'] = null): RunTransition => ({
  from,
  to: status,
  revision: 0,
  workerId: null,
  at: new Date(T0 + ms).toISOString(),
});

describe('runningMs (the run page\'s "Ran for")', () => {
  it('sums the time running over every attempt, not the backoff between them', () => {
    const transitions = [
      to('queued', 0),
      to('running', 10, 'queued'),
      to('waiting', 40, 'running'), // attempt 1 failed after 30 ms; the retry waits a minute
      to('queued', 60_040, 'waiting'),
      to('running', 60_050, 'queued'),
      to('waiting', 60_080, 'running'), // attempt 2: 30 ms
      to('queued', 180_080, 'waiting'),
      to('running', 180_090, 'queued'),
      to('completed', 180_130, 'running'), // attempt 3: 40 ms
    ];
    expect(runningMs(transitions)).toBe(100);
  });

  it('counts a takeover (running to running) as running throughout', () => {
    expect(runningMs([to('queued', 0), to('running', 5), to('running', 1_005, 'running'), to('failed', 1_010, 'running')])).toBe(1_005);
  });

  it('counts a run running now up to now, unless the list of transitions was cut short', () => {
    const transitions = [to('queued', 0), to('running', 100, 'queued')];
    expect(runningMs(transitions, { now: T0 + 350 })).toBe(250);
    expect(runningMs(transitions, { now: T0 + 350, complete: false })).toBe(0);
  });

  it('is 0 for a run that never ran', () => {
    expect(runningMs([to('queued', 0), to('cancelled', 50, 'queued')])).toBe(0);
  });
});
