import { describe, expect, it } from '@jest/globals';
import type { TaskView } from '@nest-durable/common';
import { waterfall } from './waterfall';

const T0 = Date.parse('2026-12-07T10:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const step = (fields: Partial<TaskView>): TaskView => ({
  key: 'k',
  kind: 'task',
  seq: 0,
  name: 'n',
  status: 'completed',
  attempts: 1,
  output: null,
  error: null,
  createdAt: at(0),
  startedAt: null,
  finishedAt: null,
  wakeAt: null,
  childId: null,
  ...fields,
});

describe('waterfall', () => {
  it('puts each attempt of a task at its own start with its own duration, the ones before the last failed', () => {
    const charge = step({
      status: 'completed',
      attempts: 3,
      startedAt: at(100),
      finishedAt: at(400),
      attemptTimes: [
        { attempt: 1, startedAt: at(100), durationMs: 30 },
        { attempt: 2, startedAt: at(200), durationMs: 40 },
        { attempt: 3, startedAt: at(350), durationMs: 50 },
      ],
    });
    const { fromMs, toMs, rows } = waterfall([charge], { createdAt: at(0), startedAt: at(50), finishedAt: at(500) }, T0 + 10_000);
    expect([fromMs - T0, toMs - T0]).toEqual([50, 500]);
    expect(rows[0].map((bar) => [bar.attempt, bar.startMs - T0, bar.durationMs, bar.tone])).toEqual([
      [1, 100, 30, 'failed'],
      [2, 200, 40, 'failed'],
      [3, 350, 50, 'completed'],
    ]);
    expect(rows[0][1].label).toBe('attempt 2: 40 ms, failed');
  });

  it('draws a task of an older worker whole (or at its end only), and a wait until now while it waits', () => {
    const timed = step({ startedAt: at(10), finishedAt: at(60), attempts: 2 });
    const untimed = step({ status: 'failed', finishedAt: at(80) });
    const sleeping = step({ kind: 'sleep', status: 'waiting', createdAt: at(90), startedAt: at(90) });
    const { toMs, rows } = waterfall([timed, untimed, sleeping], { createdAt: at(0), startedAt: at(5), finishedAt: null }, T0 + 1_000);
    expect(rows.map(([bar]) => [bar.startMs - T0, bar.durationMs, bar.tone])).toEqual([
      [10, 50, 'completed'],
      [80, 0, 'failed'],
      [90, 910, 'waiting'],
    ]);
    expect(toMs - T0).toBe(1_000);
  });

  it("shows a retry wait's failed attempts before the wait while its task has no result", () => {
    const wait = step({
      kind: 'retry',
      status: 'waiting',
      attempts: 1,
      createdAt: at(40),
      startedAt: at(40),
      attemptTimes: [{ attempt: 1, startedAt: at(10), durationMs: 30 }],
    });
    const { rows } = waterfall([wait], { createdAt: at(0), startedAt: at(5), finishedAt: null }, T0 + 100);
    expect(rows[0].map((bar) => [bar.attempt, bar.startMs - T0, bar.durationMs, bar.tone])).toEqual([
      [1, 10, 30, 'failed'],
      [undefined, 40, 60, 'waiting'],
    ]);
  });

  it('marks a completion token, an update and a patch at their record, and says a lost branch lost', () => {
    const token = step({ kind: 'token', createdAt: at(20) });
    const update = step({ kind: 'update', status: 'failed', createdAt: at(30) });
    const lost = step({ kind: 'event', key: 'group:race#1/0', output: { lost: true }, createdAt: at(10), startedAt: at(10), finishedAt: at(70) });
    const { rows } = waterfall([token, update, lost], { createdAt: at(0), startedAt: at(5), finishedAt: at(80) }, T0 + 100);
    expect(rows.map(([bar]) => [bar.startMs - T0, bar.durationMs, bar.tone, bar.label])).toEqual([
      [20, 0, 'marker', 'completion token made'],
      [30, 0, 'marker', 'update applied, failed'],
      [10, 60, 'waited', 'event lost to another branch after 60 ms'],
    ]);
  });
});
