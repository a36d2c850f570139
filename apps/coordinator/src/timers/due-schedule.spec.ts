import { describe, expect, it } from '@jest/globals';
import { DueSchedule } from './due-schedule';

const run = (runId: string, at: number, queue = 'q:1') => ({ runId, queue, at });
const ids = (runs: { runId: string }[]) => runs.map((r) => r.runId);

describe('DueSchedule', () => {
  it('hands out runs soonest first, only those due', () => {
    const schedule = new DueSchedule(100);
    for (const [id, at] of [
      ['c', 30],
      ['a', 10],
      ['b', 20],
      ['b2', 20],
      ['d', 40],
    ] as const)
      schedule.add(run(id, at));
    expect(schedule.next?.runId).toBe('a');
    expect(ids(schedule.takeDue(20))).toEqual(['a', 'b', 'b2']);
    expect(ids(schedule.takeDue(25))).toEqual([]);
    expect(schedule.size).toBe(2);
    expect(ids(schedule.takeDue(Infinity))).toEqual(['c', 'd']);
  });

  it('holds one entry per run: a new due time moves it', () => {
    const schedule = new DueSchedule(100);
    schedule.add(run('a', 10));
    schedule.add(run('b', 20));
    schedule.add(run('a', 30));
    schedule.add(run('b', 20));
    expect(schedule.size).toBe(2);
    expect(ids(schedule.takeDue(Infinity))).toEqual(['b', 'a']);
  });

  it('stays within capacity by dropping the latest, and says from when it may miss due times', () => {
    const schedule = new DueSchedule(3);
    for (const [id, at] of [
      ['a', 10],
      ['b', 20],
      ['c', 30],
    ] as const)
      schedule.add(run(id, at));
    expect(schedule.completeBefore).toBe(Infinity);
    schedule.add(run('late', 50));
    expect(schedule.completeBefore).toBe(50);
    schedule.add(run('early', 5));
    expect(schedule.size).toBe(3);
    expect(schedule.completeBefore).toBe(30);
    expect(ids(schedule.takeDue(Infinity))).toEqual(['early', 'a', 'b']);
  });

  it('is complete again after a load that was not cut, unless something was dropped while it ran', () => {
    const schedule = new DueSchedule(2);
    schedule.add(run('a', 10));
    schedule.add(run('b', 20));
    schedule.add(run('c', 30));
    expect(schedule.completeBefore).toBe(30);
    schedule.takeDue(20);

    schedule.beginReload();
    schedule.endReload([run('c', 30)]);
    expect(schedule.completeBefore).toBe(Infinity);
    expect(ids(schedule.takeDue(Infinity))).toEqual(['c']);

    schedule.beginReload();
    schedule.add(run('x', 1));
    schedule.add(run('y', 2));
    schedule.add(run('z', 3)); // dropped while the load ran: the load may not have seen it
    schedule.endReload([run('x', 1)]);
    expect(schedule.completeBefore).toBe(3);
  });

  it('after a load cut at its limit, is complete only before the last due time it read', () => {
    const schedule = new DueSchedule(10);
    schedule.beginReload();
    schedule.endReload([run('a', 10), run('b', 20)], 20);
    expect(schedule.completeBefore).toBe(20);
    schedule.beginReload();
    schedule.endReload(undefined); // a failed load changes nothing
    expect(schedule.completeBefore).toBe(20);
    expect(schedule.size).toBe(2);
  });
});
