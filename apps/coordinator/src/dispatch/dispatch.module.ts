import { redisConnectionOptions } from '@app/config';
import { DEFAULT_OUTBOX_OPTIONS, OutboxModule } from '@app/outbox';
import { PublisherModule } from '@app/streams';
import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { TimersModule } from '../timers/timers.module';
import { OutboxDueDaemon } from './outbox-due.daemon';
import { OutboxMetrics } from './outbox.metrics';
import { RepublishDaemon } from './republish.daemon';
import { StreamPartitions } from './stream-partitions';

/**
 * Reliable dispatch (DISPATCH other than `none`): the publisher, the outbox enqueuer, and under
 * leader election (LeaderElectionModule, imported by the coordinator) the republish daemon and the wake-up of the enqueuer at due times.
 */
@Module({})
export class CoordinatorDispatchModule {
  static register(config: CoordinatorConfig): DynamicModule {
    if (config.dispatch === 'none') return { module: CoordinatorDispatchModule };
    return {
      module: CoordinatorDispatchModule,
      imports: [
        PublisherModule.forRoot({
          mode: config.dispatch,
          redis: redisConnectionOptions(config),
          partitions: { useClass: StreamPartitions },
        }),
        OutboxModule.forRoot({
          pollIntervalMs: config.outboxPollIntervalMs,
          batchSize: config.outboxBatchSize,
          maxRetries: config.outboxMaxRetries,
          retryBaseMs: config.outboxRetryBaseMs,
          retryMaxMs: config.outboxRetryMaxMs,
          staleInFlightMs: config.outboxStaleInFlightMs,
          // Recovery lags the stale age by at most a quarter of it (and never more than the default period).
          maintenanceIntervalMs: Math.min(DEFAULT_OUTBOX_OPTIONS.maintenanceIntervalMs, config.outboxStaleInFlightMs / 4),
        }),
        TimersModule,
        // The republish daemon's interval lives in its registry (started and stopped with leadership).
        ScheduleModule.forRoot(),
      ],
      providers: [RepublishDaemon, OutboxDueDaemon, OutboxMetrics],
      exports: [OutboxModule],
    };
  }
}
