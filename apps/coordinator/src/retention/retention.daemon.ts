import { LeaderElection, SingletonDaemon } from '@app/locking';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { RetentionMetrics } from './retention.metrics';
import type { RetentionWindows } from '@app/persistence';
import { RetentionRepository } from './retention.repository';

const INTERVAL = 'retention';
/** The least pause between two batches of one sweep. */
const MIN_PAUSE_MS = 10;

/**
 * How long a sweep pauses after a batch that took `tookMs`, so that its batches take `busyPercent` of its time
 * (RETENTION_BUSY_PERCENT; 50 pauses as long as the batch took), and never less than MIN_PAUSE_MS.
 */
export function pauseAfterBatch(tookMs: number, busyPercent: number): number {
  return Math.max(MIN_PAUSE_MS, (tookMs * (100 - busyPercent)) / busyPercent);
}

export interface RetentionCounts {
  runs: number;
  outbox: number;
  deadLetters: number;
}

/**
 * Deletes what has been kept long enough (RUN_RETENTION_MS, per-workflow overrides): finished runs
 * with their steps, transitions and events, sent outbox rows, dead letters. One coordinator does it
 * at a time (leader election). Every RETENTION_INTERVAL_MS it deletes in batches of
 * RETENTION_BATCH_SIZE until a batch comes back short, pausing after each batch so that the batches take
 * RETENTION_BUSY_PERCENT of the sweep's time (half by default): retention keeps at most one connection that
 * busy, and never holds a lock for longer than one batch (see RetentionRepository). A lower share deletes more
 * slowly, not more cheaply: each run costs the database the same (docs/benchmarks.md, "History").
 */
@Injectable()
export class RetentionDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'retention';
  private readonly logger = new Logger(RetentionDaemon.name);
  private sweeping: Promise<unknown> | undefined;
  private stopping = false;
  /** Ends the pause between two batches now (a pause at a low share can last many times a batch). */
  private endPause: (() => void) | undefined;

  constructor(
    private readonly election: LeaderElection,
    private readonly repository: RetentionRepository,
    private readonly scheduler: SchedulerRegistry,
    private readonly metrics: RetentionMetrics,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    this.stopping = false;
    this.scheduler.addInterval(
      INTERVAL,
      setInterval(() => this.tick(), this.config.retentionIntervalMs),
    );
    this.tick();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.scheduler.doesExist('interval', INTERVAL)) this.scheduler.deleteInterval(INTERVAL);
    this.endPause?.();
    await this.idle();
    // Only the coordinator leading retention tells how far behind it is.
    this.metrics.overdueSeconds = 0;
  }

  /** Resolves once no sweep of the daemon's own (on its interval, or on taking the lead) is under way. */
  async idle(): Promise<void> {
    await this.sweeping;
  }

  /** One sweep: deletes everything past its window, batch after batch. Returns what it deleted. */
  async sweep(): Promise<RetentionCounts> {
    const windows: RetentionWindows = { defaultMs: this.config.runRetentionMs, byWorkflow: this.config.runRetentionOverrides };
    const limit = this.config.retentionBatchSize;
    return {
      runs: await this.drain('runs', async () => {
        const { deleted, overdueSeconds } = await this.repository.deleteFinishedRuns(windows, limit);
        // A short batch deleted all it found: caught up, whatever its oldest run's age.
        this.metrics.overdueSeconds = deleted < limit ? 0 : overdueSeconds;
        return deleted;
      }),
      outbox: await this.drain('outbox', () => this.repository.deleteSentOutboxRows(windows.defaultMs, limit)),
      deadLetters: await this.drain('dead_letters', () => this.repository.deleteDeadLetters(windows, limit)),
    };
  }

  private tick(): void {
    this.sweeping ??= this.sweep()
      .then(
        (counts) => {
          if (counts.runs + counts.outbox + counts.deadLetters > 0) {
            this.logger.log(`deleted ${counts.runs} finished run(s), ${counts.outbox} sent outbox row(s), ${counts.deadLetters} dead letter(s)`);
          }
        },
        (error: Error) => {
          this.metrics.failures.inc();
          this.logger.warn(`retention failed (tried again in ${this.config.retentionIntervalMs} ms): ${error.message}`);
        },
      )
      .finally(() => (this.sweeping = undefined));
  }

  /** Runs `batch` until it deletes fewer than a full batch (or the daemon stops); returns the total. */
  private async drain(kind: string, batch: () => Promise<number>): Promise<number> {
    let total = 0;
    while (!this.stopping) {
      const started = performance.now();
      const deleted = await batch();
      total += deleted;
      if (deleted > 0) this.metrics.deleted.inc({ kind }, deleted);
      if (deleted < this.config.retentionBatchSize || this.stopping) break;
      await this.pause(pauseAfterBatch(performance.now() - started, this.config.retentionBusyPercent));
    }
    return total;
  }

  /** Waits `ms`, or until the daemon stops. */
  private pause(ms: number): Promise<void> {
    let end: (() => void) | undefined;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      end = () => {
        clearTimeout(timer);
        resolve();
      };
      this.endPause = end;
    }).finally(() => {
      // A sweep called beside the daemon's own (sweep() is public) may have set its own since.
      if (this.endPause === end) this.endPause = undefined;
    });
  }
}
