import { WorkflowWorkerModule } from '@nest-durable/worker';
import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { welcomeWorkflow } from './welcome.workflow';

/** The worker: hosts the app's workflows, configured from the environment through ConfigService. */
@Module({
  imports: [
    ConfigModule.forRoot(),
    WorkflowWorkerModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        workflows: [welcomeWorkflow],
        coordinatorUrl: config.getOrThrow<string>('COORDINATOR_URL'),
        workerId: config.get<string>('WORKER_ID', 'example-worker'),
        concurrency: Number(config.get<string>('WORKER_CONCURRENCY', '4')),
      }),
    }),
  ],
})
export class WorkerModule {}
