import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { CoordinatorApi } from './coordinator.api';

/** The terminus indicator of the coordinators the worker takes work from: up when one answers its liveness check in time. */
@Injectable()
export class CoordinatorHealth {
  constructor(
    @Inject(CoordinatorApi) private readonly api: CoordinatorApi,
    private readonly health: HealthIndicatorService,
  ) {}

  isHealthy(key = 'coordinator') {
    return this.health
      .check(key)
      .attempt(() => this.api.ping())
      .withTimeout(2_500);
  }
}
