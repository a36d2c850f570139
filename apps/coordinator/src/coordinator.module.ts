import { LeaderElectionModule } from '@app/locking';
import { NotificationsModule, OUTBOX_CHANNEL, RUN_CHANGES_CHANNEL, RUN_FINISHED_CHANNEL, RUNS_DUE_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import { PersistenceModule } from '@app/persistence';
import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { BearerTokenGuard } from './auth/bearer-token.guard';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from './config/coordinator.config';
import { DashboardModule } from './dashboard/dashboard.module';
import { DeadLettersModule } from './dead-letters/dead-letters.module';
import { CoordinatorDispatchModule } from './dispatch/dispatch.module';
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

@Module({})
export class CoordinatorModule {
  /** The whole coordinator, configured by an already validated config (see loadCoordinatorConfig). */
  static register(config: CoordinatorConfig): DynamicModule {
    const configModule: DynamicModule = {
      module: class CoordinatorConfigModule {},
      global: true,
      providers: [{ provide: COORDINATOR_CONFIG, useValue: config }],
      exports: [COORDINATOR_CONFIG],
    };
    return {
      module: CoordinatorModule,
      imports: [
        configModule,
        CoordinatorMetricsModule,
        PersistenceModule.forRootAsync({
          inject: [COORDINATOR_CONFIG],
          useFactory: (c: CoordinatorConfig) => ({
            url: c.databaseUrl,
            poolSize: c.databasePoolSize,
            claimPoolSize: c.databaseClaimPoolSize,
            dispatch: c.dispatch,
            applicationName: c.applicationName,
          }),
        }),
        NotificationsModule.forRootAsync({
          inject: [COORDINATOR_CONFIG],
          useFactory: (c: CoordinatorConfig) => ({
            url: c.databaseUrl,
            applicationName: c.applicationName,
            channels: [RUNS_READY_CHANNEL, RUN_FINISHED_CHANNEL, RUNS_DUE_CHANNEL, RUN_CHANGES_CHANNEL, ...(c.dispatch === 'none' ? [] : [OUTBOX_CHANNEL])],
            probeIntervalMs: c.listenerProbeIntervalMs,
          }),
        }),
        ScheduleModule.forRoot(),
        // Singleton daemons (retention; with a publisher, republish and outbox-due) run on one coordinator at a time.
        LeaderElectionModule.forRoot({ checkIntervalMs: config.leaderCheckIntervalMs }),
        TimersModule,
        CoordinatorDispatchModule.register(config),
        RunsModule,
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
