import { describe, expect, it } from '@jest/globals';
import type { NotificationListener } from '@app/outbox';
import type { Database, DueRun } from '@app/persistence';
import { performance } from 'node:perf_hooks';
import type { CoordinatorConfig } from '../config/coordinator.config';
import type { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { eventually } from '../../../../test/support/poll';
import { DueTimers, parseDuePayload } from './due-timers.service';

const localNow = () => performance.timeOrigin + performance.now();

/** DueTimers with a database whose clock runs `skewMs` ahead of ours, and a RunLifecycle that records the runs that became ready. */
function timersWithSkew(skewMs: number, upcoming: (databaseNow: number) => DueRun[]) {
  const wakes: { queue: string; runs: number; at: number }[] = [];
  // The database answers its clock (databaseNow) and the upcoming due times (upcomingDueTimes).
  const db = {
    query: async (statement: string) => (statement.includes('clock_timestamp()') ? [{ now: localNow() + skewMs }] : upcoming(localNow() + skewMs)),
  } as unknown as Database;
  const listener = { subscribe: () => () => undefined } as unknown as NotificationListener;
  const lifecycle = {
    becameReady: (perQueue: Map<string, number>) => {
      for (const [queue, runs] of perQueue) wakes.push({ queue, runs, at: localNow() + skewMs });
    },
  } as unknown as RunLifecycle;
  const config = { timerHorizonMs: 60_000, timerMaxEntries: 100 } as CoordinatorConfig;
  return { timers: new DueTimers(db, listener, lifecycle, config), wakes };
}

describe('DueTimers', () => {
  it.each([5_000, -5_000])('acts at the due time by the database clock when it runs %i ms off ours', async (skewMs) => {
    let dueAt = 0;
    const { timers, wakes } = timersWithSkew(skewMs, (databaseNow) => {
      dueAt = databaseNow + 300;
      return [
        { runId: 'r1', queue: 'q:1', at: dueAt },
        { runId: 'r2', queue: 'q:1', at: dueAt },
      ];
    });
    timers.onApplicationBootstrap();
    try {
      const [wake] = await eventually('the wake-up', async () => (wakes.length > 0 ? wakes : undefined), 3_000);
      expect(wake).toMatchObject({ queue: 'q:1', runs: 2 });
      // Not before the due time (a claim would find nothing), and not a skew late.
      expect(wake.at).toBeGreaterThanOrEqual(dueAt);
      expect(wake.at - dueAt).toBeLessThan(1_000);
    } finally {
      await timers.beforeApplicationShutdown();
    }
  });

  it('reads the NOTIFY payload, and ignores a malformed one', () => {
    expect(parseDuePayload('1764800000123.456000 0195e0b6-0000-7000-8000-000000000001 order:1.0.0@eu')).toEqual({
      at: 1764800000123.456,
      runId: '0195e0b6-0000-7000-8000-000000000001',
      queue: 'order:1.0.0@eu',
    });
    expect(parseDuePayload('')).toBeUndefined();
    expect(parseDuePayload('soon r1 q')).toBeUndefined();
    expect(parseDuePayload('1764800000123 r1')).toBeUndefined();
  });
});
