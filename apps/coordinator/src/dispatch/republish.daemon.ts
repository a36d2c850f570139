import { LeaderElection, SingletonDaemon } from '@app/locking';
import { OutboxEnqueuer } from '@app/outbox';
import { Database, queuesNeedingWakeups, republishWakeups } from '@app/persistence';
import { type Publisher, PUBLISHER } from '@app/streams';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';

const BATCH = 1_000;
/** Its interval in @nestjs/schedule's registry (from the injected config, so not a decorator's). */
const INTERVAL = 'republish';

/**
 * Redis contents are disposable; the database is the truth. Periodically tops up the wake-ups of
 * every queue that has runs waiting too long (due and untaken for REPUBLISH_AFTER_MS, or held by a
 * claim that went idle): to as many as it has such runs, counting the wake-ups still in the outbox
 * and those Redis holds undelivered, never beyond. So a Redis that lost its contents (FLUSHALL, a
 * failover, a restart without persistence) gets them back, and a queue nobody reads holds at most
 * one wake-up per waiting run however often this runs. Wake-ups are interchangeable within a queue,
 * so counting is enough. It also runs the moment the coordinator's Redis connection is back after it
 * was lost, for every queue with a run due (not only those due REPUBLISH_AFTER_MS): a Redis that
 * restarted empty lost every wake-up it held, and the runs they were for would otherwise wait for the
 * next round. One coordinator runs it at a time.
 */
@Injectable()
export class RepublishDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'republish';
  private readonly logger = new Logger(RepublishDaemon.name);
  private running: Promise<number> | undefined;
  private stopRepublishingOnRecovery: (() => void) | undefined;

  constructor(
    private readonly db: Database,
    private readonly election: LeaderElection,
    @Inject(PUBLISHER) private readonly publisher: Publisher,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly scheduler: SchedulerRegistry,
    private readonly enqueuer: OutboxEnqueuer,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    const timer = setInterval(() => this.runOnce(this.config.republishAfterMs), this.config.republishIntervalMs);
    this.scheduler.addInterval(INTERVAL, timer);
    this.stopRepublishingOnRecovery = this.publisher.onRecovered(() => void this.recover());
  }

  async stop(): Promise<void> {
    this.stopRepublishingOnRecovery?.();
    this.stopRepublishingOnRecovery = undefined;
    // At shutdown @nestjs/schedule has cleared its intervals already, before leader election steps down.
    if (this.scheduler.doesExist('interval', INTERVAL)) this.scheduler.deleteInterval(INTERVAL);
    await this.running;
  }

  /**
   * Redis is back: after the round under way (it ran against the Redis that was lost), rounds for every
   * queue with a run due, until one finds fewer wake-ups missing than a round writes; then the outbox rows
   * that failed to publish meanwhile go at once. In that order: a round counts those rows as on their way,
   * and would count them twice if they reached Redis between its reading of the outbox and of Redis.
   */
  private async recover(): Promise<void> {
    this.logger.log(`${this.publisher.name} is back: republishing the wake-ups of every run due`);
    while (this.running) await this.running;
    // Stopped (stepped down) meanwhile: the next leader's rounds and the outbox's own retries do it.
    while (this.stopRepublishingOnRecovery && (await this.runOnce(0)) >= BATCH) {}
    if (!this.stopRepublishingOnRecovery) return;
    await this.enqueuer.retryNow().catch((error: Error) => this.logger.warn(`retrying the outbox now failed: ${error.message}`));
  }

  /** One round, unless one is under way (whose count it returns); resolves with how many wake-ups it wrote. */
  private runOnce(afterMs: number): Promise<number> {
    this.running ??= this.republish(afterMs)
      .catch((error: Error) => {
        this.logger.warn(`republish failed: ${error.message}`);
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** Writes outbox rows for the wake-ups missing for runs due `afterMs` or longer; returns how many. */
  async republish(afterMs = this.config.republishAfterMs): Promise<number> {
    const needs = await queuesNeedingWakeups(this.db, afterMs, this.config.claimMinIdleTimeMs);
    if (needs.length === 0) return 0;
    const undelivered = await this.publisher.undelivered(needs.map((need) => need.queue));
    let budget = BATCH;
    const missing = needs.flatMap(({ queue, needed, coming }) => {
      const count = Math.min(budget, needed - coming - (undelivered.get(queue) ?? 0));
      if (count <= 0) return [];
      budget -= count;
      return [{ queue, count }];
    });
    if (missing.length === 0) return 0;
    const rows = await republishWakeups(this.db, missing, this.config.claimMinIdleTimeMs);
    if (rows.length > 0) this.logger.log(`republished ${rows.length} wake-up(s) for ${missing.length} queue(s)`);
    return rows.length;
  }
}
