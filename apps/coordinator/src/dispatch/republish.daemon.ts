import { LeaderElection, SingletonDaemon } from '@app/locking';
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
 * so counting is enough. One coordinator runs it at a time.
 */
@Injectable()
export class RepublishDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'republish';
  private readonly logger = new Logger(RepublishDaemon.name);
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly election: LeaderElection,
    @Inject(PUBLISHER) private readonly publisher: Publisher,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    const timer = setInterval(() => {
      this.running ??= this.republish()
        .then(
          () => undefined,
          (error: Error) => this.logger.warn(`republish failed: ${error.message}`),
        )
        .finally(() => (this.running = undefined));
    }, this.config.republishIntervalMs);
    this.scheduler.addInterval(INTERVAL, timer);
  }

  async stop(): Promise<void> {
    // At shutdown @nestjs/schedule has cleared its intervals already, before leader election steps down.
    if (this.scheduler.doesExist('interval', INTERVAL)) this.scheduler.deleteInterval(INTERVAL);
    await this.running;
  }

  /** Writes outbox rows for the wake-ups missing; returns how many. */
  async republish(): Promise<number> {
    const needs = await queuesNeedingWakeups(this.db, this.config.republishAfterMs, this.config.claimMinIdleTimeMs);
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
