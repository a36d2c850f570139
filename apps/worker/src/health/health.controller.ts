import { CoordinatorHealth, WorkerRuntimeHealth } from '@nest-durable/worker';
import { RedisHealth } from '@app/streams';
import { Controller, Get, Optional } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthIndicatorFunction } from '@nestjs/terminus';

/**
 * Liveness: the consume loop is making progress (not merely that the process answers). Readiness:
 * that, the coordinator answers, and Redis answers when a Redis subscriber is configured.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly runtime: WorkerRuntimeHealth,
    private readonly coordinator: CoordinatorHealth,
    @Optional() private readonly redis?: RedisHealth,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.runtime.isHealthy()]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    const checks: HealthIndicatorFunction[] = [() => this.runtime.isHealthy(), () => this.coordinator.isHealthy()];
    if (this.redis) checks.push(() => this.redis!.isHealthy());
    return this.health.check(checks);
  }
}
