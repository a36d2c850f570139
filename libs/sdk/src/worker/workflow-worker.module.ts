import { ClassProvider, DynamicModule, ExistingProvider, FactoryProvider, Module } from '@nestjs/common';
import { hostname } from 'node:os';
import { HttpSubscriber } from '../subscribers/http.subscriber';
import { SUBSCRIBER } from '../subscribers/subscriber.interface';
import { CoordinatorApi } from './coordinator.api';
import { RunExecutor } from './run-executor';
import { WorkerRuntime } from './worker-runtime.service';
import { WORKER_OPTIONS, type ResolvedWorkerOptions, type WorkflowWorkerOptions } from './worker.constants';
import { WorkflowRegistry } from './workflow.registry';

/** How to provide the subscriber: the same shapes as any Nest provider, without `provide`. */
export type SubscriberProvider =
  | Omit<ClassProvider, 'provide'>
  | Omit<FactoryProvider, 'provide'>
  | Omit<ExistingProvider, 'provide'>;

export interface WorkflowWorkerModuleOptions extends WorkflowWorkerOptions {
  /** Default: the HTTP claim subscriber. */
  subscriber?: SubscriberProvider;
}

/**
 * Hosts workflows in a Nest app: claims runs through the subscriber, executes them, reports back.
 *
 * ```ts
 * WorkflowWorkerModule.forRoot({ workflows: [orderProcessing], coordinatorUrl: 'http://coordinator:3000' })
 * ```
 */
@Module({})
export class WorkflowWorkerModule {
  static forRoot(options: WorkflowWorkerModuleOptions): DynamicModule {
    const { subscriber, ...workerOptions } = options;
    return {
      module: WorkflowWorkerModule,
      providers: [
        { provide: WORKER_OPTIONS, useValue: resolveWorkerOptions(workerOptions) },
        WorkflowRegistry,
        CoordinatorApi,
        RunExecutor,
        HttpSubscriber,
        { provide: SUBSCRIBER, ...(subscriber ?? { useExisting: HttpSubscriber }) } as ClassProvider,
        WorkerRuntime,
      ],
      exports: [WorkerRuntime, CoordinatorApi, WorkflowRegistry, WORKER_OPTIONS],
    };
  }
}

export function resolveWorkerOptions(options: WorkflowWorkerOptions): ResolvedWorkerOptions {
  const resolved: ResolvedWorkerOptions = {
    workerId: `${hostname()}-${process.pid}`,
    concurrency: 10,
    heartbeatIntervalMs: 30_000,
    claimWaitMs: 20_000,
    shutdownGraceMs: 10_000,
    inProcessRetryMaxMs: 5_000,
    shards: [] as string[],
    headers: {},
    ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)),
  } as ResolvedWorkerOptions;
  if (!Number.isInteger(resolved.concurrency) || resolved.concurrency < 1) {
    throw new Error(`concurrency must be a positive integer, got ${resolved.concurrency}`);
  }
  return resolved;
}
