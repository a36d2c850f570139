import { DEFAULT_OUTBOX_OPTIONS, type OutboxOptions } from '@app/outbox';
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { TimersModule } from '../timers/timers.module';
import { OutboxDueDaemon } from './outbox-due.daemon';
import { OutboxMetrics } from './outbox.metrics';
import { RepublishDaemon } from './republish.daemon';

/** The outbox enqueuer's options from the coordinator's config (OutboxModule.forRoot). */
export function outboxOptions(config: CoordinatorConfig): Partial<OutboxOptions> {
  return {
    pollIntervalMs: config.outboxPollIntervalMs,
    batchSize: config.outboxBatchSize,
    maxRetries: config.outboxMaxRetries,
    retryBaseMs: config.outboxRetryBaseMs,
    retryMaxMs: config.outboxRetryMaxMs,
    staleInFlightMs: config.outboxStaleInFlightMs,
    // Recovery lags the stale age by at most a quarter of it (and never more than the default period).
    maintenanceIntervalMs: Math.min(DEFAULT_OUTBOX_OPTIONS.maintenanceIntervalMs, config.outboxStaleInFlightMs / 4),
  };
}

/**
 * What reliable dispatch (DISPATCH other than `none`) runs around the publisher and the outbox enqueuer (PublisherModule
 * and OutboxModule, imported beside it by CoordinatorModule): under leader election (LeaderElectionModule) the
 * republish daemon and the wake-up of the enqueuer at due times, and the outbox's metrics.
 */
@Module({
  // The republish daemon's interval lives in its registry (started and stopped with leadership).
  imports: [TimersModule, ScheduleModule.forRoot()],
  providers: [RepublishDaemon, OutboxDueDaemon, OutboxMetrics],
})
export class CoordinatorDispatchModule {}
