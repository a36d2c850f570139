import { ClassProvider, DynamicModule, ExistingProvider, FactoryProvider, Module, type ModuleMetadata } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WorkerHealth } from './worker.health';
import { hostname } from 'node:os';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import { HttpSubscriber } from './subscribers/http.subscriber';
import { SUBSCRIBER, type Subscriber } from './subscribers/subscriber.interface';
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
  /**
   * How the worker finds work. Default: the HTTP claim subscriber. Any other subscriber (a built-in
   * Redis one, or your own) gets the HTTP subscriber as its backup (see FailoverSubscriber).
   */
  subscriber?: SubscriberProvider;
  /** Modules whose providers the subscriber provider injects (e.g. RedisModule). */
  imports?: ModuleMetadata['imports'];
}

/** The subscriber the worker was configured with, before the HTTP backup is put behind it. */
export const PRIMARY_SUBSCRIBER = Symbol('PRIMARY_SUBSCRIBER');

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
    const { subscriber, imports, ...workerOptions } = options;
    return {
      module: WorkflowWorkerModule,
      imports: [...(imports ?? []), TerminusModule],
      providers: [
        { provide: WORKER_OPTIONS, useValue: resolveWorkerOptions(workerOptions) },
        WorkflowRegistry,
        CoordinatorApi,
        RunExecutor,
        HttpSubscriber,
        { provide: PRIMARY_SUBSCRIBER, ...(subscriber ?? { useExisting: HttpSubscriber }) } as ClassProvider,
        {
          provide: SUBSCRIBER,
          useFactory: (primary: Subscriber, http: HttpSubscriber, worker: ResolvedWorkerOptions) =>
            primary instanceof HttpSubscriber ? primary : new FailoverSubscriber(primary, http, worker.claimWaitMs),
          inject: [PRIMARY_SUBSCRIBER, HttpSubscriber, WORKER_OPTIONS],
        },
        WorkerRuntime,
        WorkerHealth,
      ],
      exports: [WorkerRuntime, CoordinatorApi, WorkflowRegistry, WORKER_OPTIONS, SUBSCRIBER, WorkerHealth],
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
