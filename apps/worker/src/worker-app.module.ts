import { redisSubscriber, WorkflowDefinition, WorkflowWorkerModule, type WorkflowWorkerModuleOptions } from '@app/sdk';
import { RedisModule } from '@app/streams';
import { DynamicModule, Module } from '@nestjs/common';
import type { WorkerConfig } from './config/worker.config';
import { EXAMPLE_WORKFLOWS } from './workflows';

/** Worker module options from the validated config: the built-in subscriber it names, and Redis when needed. */
export function workerModuleOptions(
  config: WorkerConfig,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  workflows: WorkflowDefinition<any, any>[],
): WorkflowWorkerModuleOptions {
  const { subscriber, redisUrl, redisPrefix, redisBlockMs, streamShards, claimMinIdleTimeMs, maxDeliveries, ...worker } = config;
  if (subscriber === 'http') return { ...worker, workflows };
  return {
    ...worker,
    workflows,
    imports: [RedisModule.forRoot({ url: redisUrl, prefix: redisPrefix })],
    subscriber: redisSubscriber(subscriber, {
      blockMs: redisBlockMs,
      partitionsFallback: streamShards,
      claimMinIdleTimeMs,
      maxDeliveries,
    }),
  };
}

@Module({})
export class WorkerAppModule {
  /** The worker app hosting the example workflows, configured by an already validated config. */
  static register(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [WorkflowWorkerModule.forRoot(workerModuleOptions(config, EXAMPLE_WORKFLOWS))],
    };
  }
}
