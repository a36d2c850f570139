import {
  type ClassProvider,
  ConfigurableModuleBuilder,
  type ExistingProvider,
  type FactoryProvider,
  Module,
  type ModuleMetadata,
  type Provider,
} from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { CoordinatorApi } from './coordinator.api';
import { CoordinatorHealth } from './coordinator.health';
import { RegistrationGate } from './registration-gate';
import { RunExecutor } from './run-executor';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import { HttpSubscriber } from './subscribers/http.subscriber';
import { SUBSCRIBER, type Subscriber } from './subscribers/subscriber.interface';
import { resolveWorkerOptions, WORKER_OPTIONS, type ResolvedWorkerOptions, type WorkflowWorkerOptions } from './worker.options';
import { WorkerRegistrar } from './worker-registration';
import { WorkerRuntimeHealth } from './worker-runtime.health';
import { WorkerRuntime } from './worker-runtime.service';
import { WorkflowExplorer } from './workflow.explorer';
import { WorkflowRegistry } from './workflow.registry';

/** How to provide the subscriber: the same shapes as any Nest provider, without `provide`. */
export type SubscriberProvider = Omit<ClassProvider, 'provide'> | Omit<FactoryProvider, 'provide'> | Omit<ExistingProvider, 'provide'>;

/**
 * What shapes the module rather than the worker, given the same way to `forRoot` and `forRootAsync`:
 * providers are declared before any options factory has run.
 */
export interface WorkflowWorkerModuleExtras {
  /**
   * How the worker finds work. Default: the HTTP claim subscriber. Any other subscriber (a built-in
   * Redis one, or your own) gets the HTTP subscriber as its backup (see FailoverSubscriber).
   */
  subscriber?: SubscriberProvider;
  /**
   * Modules whose providers the subscriber provider injects (e.g. RedisModule); with `forRootAsync`,
   * the same list serves the options factory too (e.g. ConfigModule).
   */
  imports?: ModuleMetadata['imports'];
  /** Makes the module's exports (WorkerRuntime, CoordinatorApi, WORKER_OPTIONS, …) injectable in every module. Default false. */
  isGlobal?: boolean;
}

/** Injection token of the options exactly as given to `forRoot` or made by `forRootAsync`'s factory. */
export const WORKFLOW_WORKER_MODULE_OPTIONS = 'WORKFLOW_WORKER_MODULE_OPTIONS';

/** The subscriber the worker was configured with, before the HTTP backup is put behind it. */
export const PRIMARY_SUBSCRIBER = Symbol('PRIMARY_SUBSCRIBER');

/** The providers of a worker taking work through `subscriber`, its options read from the module's options token. */
function workerProviders(subscriber: SubscriberProvider | undefined): Provider[] {
  return [
    { provide: WORKER_OPTIONS, useFactory: resolveWorkerOptions, inject: [WORKFLOW_WORKER_MODULE_OPTIONS] },
    WorkflowExplorer,
    {
      provide: WorkflowRegistry,
      useFactory: (options: ResolvedWorkerOptions, explorer: WorkflowExplorer) => new WorkflowRegistry(options, explorer.workflows()),
      inject: [WORKER_OPTIONS, WorkflowExplorer],
    },
    CoordinatorApi,
    RunExecutor,
    HttpSubscriber,
    { provide: PRIMARY_SUBSCRIBER, ...(subscriber ?? { useExisting: HttpSubscriber }) } as Provider,
    {
      provide: SUBSCRIBER,
      useFactory: (primary: Subscriber, http: HttpSubscriber, worker: ResolvedWorkerOptions) =>
        primary instanceof HttpSubscriber ? primary : new FailoverSubscriber(primary, http, worker.claimWaitMs),
      inject: [PRIMARY_SUBSCRIBER, HttpSubscriber, WORKER_OPTIONS],
    },
    RegistrationGate,
    WorkerRuntime,
    WorkerRegistrar,
    WorkerRuntimeHealth,
    CoordinatorHealth,
  ];
}

// A named token (the builder would make a random one), the same in every copy of this package.
const { ConfigurableModuleClass, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } = new ConfigurableModuleBuilder<WorkflowWorkerOptions>({
  moduleName: 'WorkflowWorker',
  optionsInjectionToken: WORKFLOW_WORKER_MODULE_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createWorkflowWorkerOptions')
  // The keys given here are kept out of forRoot's options value and handed to the transform instead.
  .setExtras<WorkflowWorkerModuleExtras>({ subscriber: undefined, imports: undefined, isGlobal: false }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    // forRoot: `imports` arrives as an extra; forRootAsync: Nest has put it in the definition already.
    // DiscoveryModule: WorkflowExplorer finds the app's @Workflow classes through it.
    imports: [...(definition.imports ?? []), ...(extras.imports ?? []), TerminusModule, DiscoveryModule],
    providers: [...(definition.providers ?? []), ...workerProviders(extras.subscriber)],
    exports: [WorkerRuntime, CoordinatorApi, WorkflowRegistry, WORKER_OPTIONS, SUBSCRIBER, WorkerRuntimeHealth, CoordinatorHealth],
  }))
  .build();

/** `forRoot`'s argument: the worker's options and the module's extras. */
export type WorkflowWorkerModuleOptions = typeof OPTIONS_TYPE;
/** `forRootAsync`'s argument: `useFactory` + `inject` (or `useClass`/`useExisting`), `imports`, and the module's extras. */
export type WorkflowWorkerModuleAsyncOptions = typeof ASYNC_OPTIONS_TYPE;

/**
 * Hosts workflows in a Nest app: takes runs through the subscriber, executes them, reports back. It hosts the
 * `@Workflow` classes among the providers of every module of the app, and the definitions given as `workflows`.
 *
 * ```ts
 * WorkflowWorkerModule.forRoot({ coordinatorUrl: 'http://coordinator:3000' }) // + `providers: [OrderWorkflow]` in some module
 * WorkflowWorkerModule.forRoot({ workflows: [orderProcessing], coordinatorUrl: 'http://coordinator:3000' })
 * WorkflowWorkerModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ workflows: [orderProcessing], coordinatorUrl: config.getOrThrow('COORDINATOR_URL') }),
 * })
 * ```
 */
@Module({})
export class WorkflowWorkerModule extends ConfigurableModuleClass {}
