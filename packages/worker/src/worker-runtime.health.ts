import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { WorkerRuntime } from './worker-runtime.service';

/**
 * The terminus indicator of the worker's consume loop: up while it makes progress (WorkerRuntime.progress), so a
 * worker whose read has hung is reported down while its process still answers. The liveness check of a worker.
 */
@Injectable()
export class WorkerRuntimeHealth {
  constructor(
    private readonly runtime: WorkerRuntime,
    private readonly health: HealthIndicatorService,
  ) {}

  isHealthy(key = 'consumer') {
    const { healthy, detail } = this.runtime.progress();
    const indicator = this.health.check(key);
    return healthy ? indicator.up({ detail }) : indicator.down({ detail });
  }
}
