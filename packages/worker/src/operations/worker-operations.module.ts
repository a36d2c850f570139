import { METRICS_REGISTRY, MetricsService } from '@app/metrics';
import { type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { Registry } from 'prom-client';
import { WorkerHealthChecks } from './worker-health.checks';
import { WorkerMetrics } from './worker.metrics';
import { workerHealthController, workerMetricsController } from './worker-operations.controllers';

export interface WorkerOperationsOptions {
  /**
   * Path of the health endpoints: `<health>/live` and `<health>/ready`. Default `health`. `false` mounts none (the
   * indicators, WorkerRuntimeHealth and CoordinatorHealth, are injectable from WorkflowWorkerModule for yours).
   */
  health?: string | false;
  /** Path of the Prometheus endpoint. Default `metrics`. `false` mounts none: give `registry` to serve the series yourself. */
  metrics?: string | false;
  /**
   * The prom-client registry the worker's series join, e.g. the one your app already serves (prom-client's global
   * `register`, or yours). Default: a registry of the module's own, with the process metrics (`wf_process_*`,
   * `wf_nodejs_*`); a registry you give gets only the worker's series.
   */
  registry?: Registry;
}

/**
 * The worker's health and metrics endpoints, for an app that hosts a worker (WorkflowWorkerModule), in one line:
 *
 * ```ts
 * imports: [WorkflowWorkerModule.forRoot({ ... }), WorkerOperationsModule.forRoot()]
 * ```
 *
 * serves `GET /health/live`, `GET /health/ready` and `GET /metrics`. It finds the worker wherever the app imports
 * WorkflowWorkerModule, and Redis's indicator when the app has a RedisModule. Mounted on whichever HTTP platform
 * the app runs; a global prefix (`app.setGlobalPrefix`) applies as to the app's own routes.
 */
@Module({})
export class WorkerOperationsModule {
  static forRoot({ health = 'health', metrics = 'metrics', registry }: WorkerOperationsOptions = {}): DynamicModule {
    const controllers: Type[] = [];
    const providers: Provider[] = [];
    if (health !== false) {
      controllers.push(workerHealthController(health));
      providers.push(WorkerHealthChecks);
    }
    if (metrics !== false || registry) {
      providers.push(MetricsService, WorkerMetrics);
      if (registry) providers.push({ provide: METRICS_REGISTRY, useValue: registry });
    }
    if (metrics !== false) controllers.push(workerMetricsController(metrics));
    return { module: WorkerOperationsModule, imports: health === false ? [] : [TerminusModule], controllers, providers };
  }
}
