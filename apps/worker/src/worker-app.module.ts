import { redisSubscriber } from '@nest-durable/worker/redis';
import { WorkflowWorkerModule, type WorkflowWorkerModuleOptions } from '@nest-durable/worker';
import { redisConnectionOptions, TracingModule } from '@app/config';
import { RedisModule } from '@app/streams';
import { WorkerOperationsModule } from '@nest-durable/worker/operations';
import { DynamicModule, Module } from '@nestjs/common';
import type { WorkerConfig } from './config/worker.config';
import { EXAMPLE_WORKFLOWS, ExampleWorkflowsModule } from './workflows';

/** Worker module options from the validated config: the built-in subscriber it names, and Redis when needed. */
export function workerModuleOptions(config: WorkerConfig, workflows: WorkflowWorkerModuleOptions['workflows']): WorkflowWorkerModuleOptions {
  const worker: WorkflowWorkerModuleOptions = {
    workflows,
    coordinatorUrl: config.coordinatorUrls,
    workerId: config.workerId,
    buildId: config.buildId,
    concurrency: config.concurrency,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    claimWaitMs: config.claimWaitMs,
    registrationIntervalMs: config.registrationIntervalMs,
    shutdownGraceMs: config.shutdownGraceMs,
    shards: config.shards,
    headers: config.workerToken ? { authorization: `Bearer ${config.workerToken}` } : {},
  };
  if (config.subscriber === 'http') return worker;
  return {
    ...worker,
    imports: [RedisModule.forRoot(redisConnectionOptions(config))],
    subscriber: redisSubscriber(config.subscriber, {
      blockMs: config.redisBlockMs,
      streamPartitions: config.streamPartitions,
      reclaimIdleMs: config.reclaimIdleMs,
      maxDeliveries: config.maxDeliveries,
    }),
  };
}

/**
 * The worker app hosting the example workflows (definitions, and the classes of ExampleWorkflowsModule), from its
 * validated config (loadWorkerConfig), which decides its shape (the subscriber, and Redis with a Redis one); it
 * serves its health and metrics (WorkerOperationsModule) on WORKER_PORT.
 */
@Module({})
export class WorkerAppModule {
  static forRoot(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [
        TracingModule.forRoot(config.tracing),
        WorkflowWorkerModule.forRoot(workerModuleOptions(config, EXAMPLE_WORKFLOWS)),
        ExampleWorkflowsModule,
        WorkerOperationsModule.forRoot(),
      ],
    };
  }
}
