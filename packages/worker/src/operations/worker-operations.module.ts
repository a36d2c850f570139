import { METRICS_REGISTRY, MetricsService } from '@app/metrics';
import { ConfigurableModuleBuilder, type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { Registry } from 'prom-client';
import { WorkerHealthChecks } from './worker-health.checks';
import { WorkerMetrics } from './worker.metrics';
import { workerHealthController, workerMetricsController } from './worker-operations.controllers';

/** Injection token of the module's options (WorkerOperationsOptions). */
export const WORKER_OPERATIONS_OPTIONS = Symbol('WORKER_OPERATIONS_OPTIONS');

export interface WorkerOperationsOptions {
  /**
   * The prom-client registry the worker's series join, e.g. the one your app already serves (prom-client's global
   * `register`, or yours). Default: a registry of the module's own, with the process metrics (`wf_process_*`,
   * `wf_nodejs_*`); a registry you give gets only the worker's series.
   */
  registry?: Registry;
}

/** Where the endpoints are mounted: fixed when the module is defined (a controller's path is), so not async. */
export interface WorkerOperationsPaths {
  /**
   * Path of the health endpoints: `<health>/live` and `<health>/ready`. Default `health`. `false` mounts none (the
   * indicators, WorkerRuntimeHealth and CoordinatorHealth, are injectable from WorkflowWorkerModule for yours).
   */
  health?: string | false;
  /** Path of the Prometheus endpoint. Default `metrics`. `false` mounts none: give `registry` to serve the series yourself. */
  metrics?: string | false;
}

const { ConfigurableModuleClass, OPTIONS_TYPE } = new ConfigurableModuleBuilder<WorkerOperationsOptions>({
  moduleName: 'WorkerOperations',
  optionsInjectionToken: WORKER_OPERATIONS_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras<WorkerOperationsPaths>({ health: 'health', metrics: 'metrics' }, (definition, { health, metrics }) => {
    const controllers: Type[] = [];
    const providers: Provider[] = [
      ...(definition.providers ?? []),
      // The worker's series join the registry given (MetricsService makes one of its own, with the process metrics, without).
      { provide: METRICS_REGISTRY, inject: [WORKER_OPERATIONS_OPTIONS], useFactory: (options: WorkerOperationsOptions) => options.registry },
      MetricsService,
      WorkerMetrics,
    ];
    if (health !== false) {
      controllers.push(workerHealthController(health ?? 'health'));
      providers.push(WorkerHealthChecks);
    }
    if (metrics !== false) controllers.push(workerMetricsController(metrics ?? 'metrics'));
    return { ...definition, imports: [...(definition.imports ?? []), ...(health === false ? [] : [TerminusModule])], controllers, providers };
  })
  .build();

/**
 * The worker's health and metrics endpoints, for an app that hosts a worker (WorkflowWorkerModule), in one line:
 *
 * ```ts
 * imports: [WorkflowWorkerModule.forRoot({ ... }), WorkerOperationsModule.forRoot()]
 * ```
 *
 * serves `GET /health/live`, `GET /health/ready` and `GET /metrics` (`forRoot({ health, metrics, registry })` for
 * other paths, `false` to mount one not at all, and your app's registry; `forRootAsync({ useFactory, health,
 * metrics })` to build the registry option from your providers). It finds the worker wherever the app imports
 * WorkflowWorkerModule, and Redis's indicator when the app has a RedisModule. Mounted on whichever HTTP platform
 * the app runs; a global prefix (`app.setGlobalPrefix`) applies as to the app's own routes.
 */
@Module({})
export class WorkerOperationsModule extends ConfigurableModuleClass {
  /** As the builder's, with everything optional: `forRoot()` mounts both endpoints at their default paths. */
  static override forRoot(options: typeof OPTIONS_TYPE = {}): DynamicModule {
    // biome-ignore lint/complexity/noThisInStatic: the builder's forRoot makes `this` the module; called on its own class it would name the builder's
    return super.forRoot(options);
  }
}
