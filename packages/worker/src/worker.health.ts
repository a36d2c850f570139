import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { CoordinatorApi } from './coordinator.api';
import { WorkerRuntime } from './worker-runtime.service';

/** The worker's own indicators: its consume loop makes progress, and the coordinator answers. */
@Injectable()
export class WorkerHealth {
  constructor(
    private readonly runtime: WorkerRuntime,
    @Inject(CoordinatorApi) private readonly api: CoordinatorApi,
    private readonly health: HealthIndicatorService,
  ) {}

  consumer(key = 'consumer') {
    const { healthy, detail } = this.runtime.progress();
    const indicator = this.health.check(key);
    return healthy ? indicator.up({ detail }) : indicator.down({ detail });
  }

  coordinator(key = 'coordinator') {
    return this.health
      .check(key)
      .attempt(() => this.api.ping())
      .withTimeout(2_500);
  }
}
