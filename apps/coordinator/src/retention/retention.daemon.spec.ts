import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { LeaderElection } from '@app/locking';
import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { FinishedRunsBatch } from '@app/persistence';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { pauseAfterBatch, RetentionDaemon } from './retention.daemon';
import type { RetentionMetrics } from './retention.metrics';
import type { RetentionRepository } from './retention.repository';

describe('pauseAfterBatch', () => {
  it('keeps the batches at the busy share of the time: as long as the batch at 50%, four times as long at 20%', () => {
    expect(pauseAfterBatch(40, 50)).toBe(40);
    expect(pauseAfterBatch(40, 20)).toBe(160);
    expect(pauseAfterBatch(40, 80)).toBe(10);
  });

  it('pauses at least 10 ms, even at 100%', () => {
    expect(pauseAfterBatch(40, 100)).toBe(10);
    expect(pauseAfterBatch(2, 50)).toBe(10);
  });
});

describe('RetentionDaemon', () => {
  const BATCH_MS = 40;
  let batches: number[];
  let overdueSeen: number[];
  /** What each batch of runs does in turn (once they run out: nothing left to delete). */
  let outcomes: (FinishedRunsBatch | Error)[];
  /** Called inside each batch of runs, before it returns. */
  let duringBatch: () => void;
  let metrics: RetentionMetrics;
  let daemon: RetentionDaemon;

  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    batches = [];
    overdueSeen = [];
    duringBatch = () => undefined;
    // Three full batches of 10, then a short one of 4; each takes BATCH_MS of the (fake) clock.
    outcomes = [
      { deleted: 10, overdueSeconds: 300 },
      { deleted: 10, overdueSeconds: 200 },
      { deleted: 10, overdueSeconds: 100 },
      { deleted: 4, overdueSeconds: 50 },
    ];
    const repository = {
      deleteFinishedRuns: async () => {
        batches.push(Date.now());
        overdueSeen.push(metrics.overdueSeconds);
        jest.advanceTimersByTime(BATCH_MS);
        duringBatch();
        const outcome = outcomes.shift() ?? { deleted: 0, overdueSeconds: 0 };
        if (outcome instanceof Error) throw outcome;
        return outcome;
      },
      deleteSentOutboxRows: async () => 0,
      deleteDeadLetters: async () => 0,
    } as unknown as RetentionRepository;
    metrics = { deleted: { inc: () => undefined }, failures: { inc: jest.fn() }, overdueSeconds: 0 } as unknown as RetentionMetrics;
    const config = {
      runRetentionMs: 1,
      runRetentionOverrides: {},
      retentionBatchSize: 10,
      retentionBusyPercent: 20,
      retentionIntervalMs: 3_600_000, // one sweep in each test: the one start() runs at once
    } as CoordinatorConfig;
    daemon = new RetentionDaemon({} as LeaderElection, repository, new SchedulerRegistry(), metrics, config);
  });

  afterEach(async () => {
    await daemon.stop();
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it('starts each batch of a sweep after the pause RETENTION_BUSY_PERCENT sets, and stops at a short batch', async () => {
    const sweep = daemon.sweep();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await sweep).toEqual({ runs: 34, outbox: 0, deadLetters: 0 });
    // 40 ms of work at 20% busy: 160 ms of pause after each full batch.
    expect(batches).toEqual([0, 200, 400, 600]);
  });

  it('ends a pause at once when it stops, and then tells nothing of how far behind it is', async () => {
    daemon.start();
    await jest.advanceTimersByTimeAsync(1); // in the 160 ms pause after the first batch
    expect(metrics.overdueSeconds).toBe(300);
    const stoppedAt = Date.now();
    // With the fake clock held still, a pause that did not end would keep stop() waiting until the test times out.
    await daemon.stop();
    expect(batches).toEqual([0]);
    expect(Date.now()).toBe(stoppedAt);
    expect(metrics.overdueSeconds).toBe(0);
  }, 1_000);

  it('starts no pause once it is stopped during a batch', async () => {
    let stopped: Promise<void> | undefined;
    // Stopped during the second batch (during the first, start() has not yet recorded the sweep stop() waits for).
    duringBatch = () => {
      if (batches.length === 2) stopped = daemon.stop();
    };
    daemon.start();
    await jest.advanceTimersByTimeAsync(161); // to the end of the first pause, and through the second batch
    // The clock held still from here: a pause begun after stop() would keep stop() waiting until the test times out.
    await stopped;
    expect(batches).toEqual([0, 200]);
  }, 1_000);

  it('counts a sweep that fails, and keeps the last figure of how far behind it is', async () => {
    outcomes = [{ deleted: 10, overdueSeconds: 300 }, new Error('canceling statement due to statement timeout')];
    daemon.start();
    await jest.advanceTimersByTimeAsync(1_000);
    await daemon.idle();
    expect(batches).toHaveLength(2);
    expect(metrics.failures.inc).toHaveBeenCalledTimes(1);
    expect(metrics.overdueSeconds).toBe(300);
  });

  it('tells how far behind it is after each full batch, and 0 once a batch comes back short', async () => {
    const sweep = daemon.sweep();
    await jest.advanceTimersByTimeAsync(1_000);
    await sweep;
    expect(overdueSeen).toEqual([0, 300, 200, 100]);
    expect(metrics.overdueSeconds).toBe(0);
  });
});
