import { NotificationListenerHealth, OutboxHealth } from '@app/outbox';
import { RedisHealth } from '@app/streams';
import { API } from '@nest-durable/common';
import { ArgumentsHost, Catch, Controller, HttpException, Inject, Optional, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HealthCheck, HealthCheckService, type HealthIndicatorFunction, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { Route } from '../http/route.decorators';

/** A failed check answers 503 with terminus' own body (which indicator is down, and why). */
@Catch(HttpException)
class HealthReportFilter {
  catch(exception: HttpException, host: ArgumentsHost): void {
    host.switchToHttp().getResponse<FastifyReply>().status(exception.getStatus()).send(exception.getResponse());
  }
}

/**
 * Liveness: the process serves HTTP. Readiness: PostgreSQL answers, the LISTEN session is up, and
 * with a publisher, Redis answers and the outbox keeps up (degraded past its thresholds).
 */
@UseFilters(HealthReportFilter)
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly listener: NotificationListenerHealth,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Optional() private readonly redis?: RedisHealth,
    @Optional() private readonly outbox?: OutboxHealth,
  ) {}

  @Route(API.live)
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  @Route(API.ready)
  @HealthCheck()
  ready() {
    const checks: HealthIndicatorFunction[] = [() => this.database.pingCheck('database').withTimeout(2_000), () => this.listener.isHealthy()];
    if (this.redis) checks.push(() => this.redis!.isHealthy());
    if (this.outbox) {
      const thresholds = { backlogAgeSeconds: this.config.outboxBacklogDegradedSeconds, deadLetters: this.config.deadLettersDegraded };
      checks.push(() => this.outbox!.isHealthy(thresholds));
    }
    return this.health.check(checks);
  }
}
