import { NotificationListenerHealth } from '@app/outbox';
import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';

/** Liveness says the process serves HTTP; readiness that it can reach PostgreSQL and hears NOTIFY. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly listener: NotificationListenerHealth,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.database.pingCheck('database').withTimeout(2_000), () => this.listener.isHealthy()]);
  }
}
