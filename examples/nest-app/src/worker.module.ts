import { WorkflowWorkerModule } from '@nest-durable/worker';
import { WorkerOperationsModule } from '@nest-durable/worker/operations';
import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { AccountsService } from './accounts.service';
import { TrialWorkflow } from './trial.workflow';
import { WelcomeWorkflow } from './welcome.workflow';

/**
 * The worker: hosts the app's workflows, configured from the environment through ConfigService, and serves its
 * health (GET /health/live, /health/ready) and metrics (GET /metrics) in one line. WelcomeWorkflow is a provider
 * like AccountsService, which Nest injects into it; WorkflowWorkerModule finds it among the providers.
 */
@Module({
  imports: [
    ConfigModule.forRoot(),
    WorkflowWorkerModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        coordinatorUrl: config.getOrThrow<string>('COORDINATOR_URL'),
        workerId: config.get<string>('WORKER_ID', 'example-worker'),
        concurrency: Number(config.get<string>('WORKER_CONCURRENCY', '4')),
      }),
    }),
    WorkerOperationsModule.forRoot(),
  ],
  providers: [AccountsService, WelcomeWorkflow, TrialWorkflow],
})
export class WorkerModule {}
