import { redisConnectionOptions, TracingModule } from '@app/config';
import { LeaderElectionModule } from '@app/locking';
import {
  NotificationsModule,
  OUTBOX_CHANNEL,
  OutboxModule,
  RUN_CHANGES_CHANNEL,
  RUN_FINISHED_CHANNEL,
  RUN_PROGRESS_CHANNEL,
  RUNS_DUE_CHANNEL,
  RUNS_READY_CHANNEL,
} from '@app/outbox';
import { PersistenceModule, UPDATE_ANSWERED_CHANNEL } from '@app/persistence';
import { PublisherModule } from '@app/streams';
import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { BearerTokenGuard } from './auth/bearer-token.guard';
import { CompletionsModule } from './completions/completions.module';
import { CoordinatorConfigModule } from './config/coordinator-config.module';
import type { CoordinatorConfig } from './config/coordinator.config';
import { DashboardModule } from './dashboard/dashboard.module';
import { DeadLettersModule } from './dead-letters/dead-letters.module';
import { CoordinatorDispatchModule, outboxOptions } from './dispatch/dispatch.module';
import { StreamPartitions } from './dispatch/stream-partitions';
import { HealthModule } from './health/health.module';
import { FeedModule } from './feed/feed.module';
import { EngineExceptionFilter } from './http/engine-exception.filter';
import { HttpDrain } from './http/http-drain';
import { CoordinatorMetricsModule } from './metrics/coordinator-metrics.module';
import { RetentionModule } from './retention/retention.module';
import { RunsModule } from './runs/runs.module';
import { StatsModule } from './stats/stats.module';
import { SchedulesModule } from './schedules/schedules.module';
import { TimersModule } from './timers/timers.module';
import { WorkerApiModule } from './worker-api/worker-api.module';
import { WorkflowsModule } from './workflows/workflows.module';
import { WorkersModule } from './workers/workers.module';
import { UpdatesModule } from './updates/updates.module';

/**
 * The whole coordinator, from its validated config (loadCoordinatorConfig): the one module that takes the config as
 * a value, since the config decides what the app is made of (with DISPATCH=none: no publisher, no outbox, no Redis).
 * Every other module is configured through `forRoot` from it, or injects it as COORDINATOR_CONFIG.
 */
@Module({})
export class CoordinatorModule {
  static forRoot(config: CoordinatorConfig): DynamicModule {
    return {
      module: CoordinatorModule,
      imports: [
        CoordinatorConfigModule.forRoot(config),
        TracingModule.forRoot(config.tracing),
        CoordinatorMetricsModule,
        PersistenceModule.forRoot({
          database: config.database,
          poolSize: config.databasePoolSize,
          claimPoolSize: config.databaseClaimPoolSize,
          dispatch: config.dispatch,
          applicationName: config.applicationName,
        }),
        NotificationsModule.forRoot({
          applicationName: config.applicationName,
          channels: [
            RUNS_READY_CHANNEL,
            RUN_FINISHED_CHANNEL,
            RUNS_DUE_CHANNEL,
            RUN_CHANGES_CHANNEL,
            RUN_PROGRESS_CHANNEL,
            UPDATE_ANSWERED_CHANNEL,
            ...(config.dispatch === 'none' ? [] : [OUTBOX_CHANNEL]),
          ],
          probeIntervalMs: config.listenerProbeIntervalMs,
        }),
        ScheduleModule.forRoot(),
        // Singleton daemons (retention; with a publisher, republish and outbox-due) run on one coordinator at a time.
        LeaderElectionModule.forRoot({ checkIntervalMs: config.leaderCheckIntervalMs }),
        TimersModule,
        ...(config.dispatch === 'none'
          ? []
          : [
              PublisherModule.forRoot({ mode: config.dispatch, redis: redisConnectionOptions(config), partitions: { useClass: StreamPartitions } }),
              OutboxModule.forRoot(outboxOptions(config)),
              CoordinatorDispatchModule,
            ]),
        RunsModule,
        CompletionsModule,
        UpdatesModule,
        SchedulesModule,
        WorkerApiModule,
        DeadLettersModule,
        StatsModule,
        FeedModule,
        WorkflowsModule,
        WorkersModule,
        RetentionModule,
        HealthModule,
        DashboardModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: EngineExceptionFilter }, { provide: APP_GUARD, useClass: BearerTokenGuard }, HttpDrain],
    };
  }
}
