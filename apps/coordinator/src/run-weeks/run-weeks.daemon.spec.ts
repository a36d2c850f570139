import { beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { LeaderElection } from '@app/locking';
import { RUN_TABLES } from '@app/persistence';
import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { RunWeeksDaemon, WEEKS_AHEAD_MS } from './run-weeks.daemon';
import type { RunWeeksMetrics } from './run-weeks.metrics';
import type { RunWeeksRepository } from './run-weeks.repository';

/** A lock wait that reached lock_timeout, as node-postgres reports it. */
const lockTimeout = () => Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });

describe('RunWeeksDaemon', () => {
  let calls: string[];
  /** What addWeeks does in turn for each call (once they run out: makes one week). */
  let outcomes: (number | Error)[];
  let failures: number;
  let daemon: RunWeeksDaemon;

  beforeEach(() => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    calls = [];
    outcomes = [];
    failures = 0;
    const repository = {
      addWeeks: async (table: string, through: Date) => {
        calls.push(`${table} through ${through.getTime()}`);
        const outcome = outcomes.shift() ?? 1;
        if (outcome instanceof Error) throw outcome;
        return outcome;
      },
    } as unknown as RunWeeksRepository;
    const metrics = { failures: { inc: () => failures++ } } as unknown as RunWeeksMetrics;
    daemon = new RunWeeksDaemon({ register: () => undefined } as unknown as LeaderElection, repository, new SchedulerRegistry(), metrics);
  });

  it("makes every run table's weeks through four weeks from now", async () => {
    expect(await daemon.round(1_000)).toBe(RUN_TABLES.length);
    expect(calls).toEqual(RUN_TABLES.map((table) => `${table} through ${1_000 + WEEKS_AHEAD_MS}`));
  });

  it("tries a table again after a lock timeout (an ANALYZE or VACUUM holding the table's lock)", async () => {
    outcomes = [lockTimeout(), lockTimeout(), 2];
    expect(await daemon.round(0)).toBe(2 + RUN_TABLES.length - 1);
    expect(calls.filter((call) => call.startsWith('runs '))).toHaveLength(3);
  });

  it('gives a round up after ten lock timeouts on one table, and on any other error at once', async () => {
    outcomes = Array.from({ length: 10 }, lockTimeout);
    await expect(daemon.round(0)).rejects.toThrow('lock timeout');
    expect(calls).toHaveLength(10);
    calls = [];
    outcomes = [new Error('permission denied for table runs')];
    await expect(daemon.round(0)).rejects.toThrow('permission denied');
    expect(calls).toHaveLength(1);
  });

  it('counts a round that failed, and runs one on taking the lead and each interval after', async () => {
    jest.useFakeTimers({ now: 0 });
    try {
      outcomes = [new Error('connection terminated')];
      daemon.start();
      await daemon.idle();
      expect(failures).toBe(1);
      calls = [];
      await jest.advanceTimersByTimeAsync(60 * 60_000);
      await daemon.idle();
      expect(calls.filter((call) => call.startsWith('runs '))).toHaveLength(1);
      await daemon.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});
