import { Controller, Get, Header, Res, type Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { WorkerHealthChecks } from './worker-health.checks';
import { WorkerMetrics } from './worker.metrics';

// Controllers made per module, at the paths the app chose: a route's path is fixed when its class is decorated.

/** `GET <path>/live` and `GET <path>/ready`, in the terminus format (503 naming the failing indicator). */
export function workerHealthController(path: string): Type {
  @Controller(path)
  class WorkerHealthController {
    constructor(
      private readonly health: HealthCheckService,
      private readonly checks: WorkerHealthChecks,
    ) {}

    @Get('live')
    @HealthCheck()
    live() {
      return this.health.check(this.checks.live);
    }

    @Get('ready')
    @HealthCheck()
    ready() {
      return this.health.check(this.checks.ready);
    }
  }
  return WorkerHealthController;
}

/** `GET <path>`: the Prometheus text, on whichever HTTP platform the app runs (Express or Fastify). */
export function workerMetricsController(path: string): Type {
  @Controller(path)
  class WorkerMetricsController {
    constructor(
      private readonly metrics: WorkerMetrics,
      private readonly adapterHost: HttpAdapterHost,
    ) {}

    @Get()
    @Header('cache-control', 'no-store')
    async scrape(@Res({ passthrough: true }) response: unknown): Promise<string> {
      const { contentType, body } = await this.metrics.text();
      this.adapterHost.httpAdapter.setHeader(response, 'content-type', contentType);
      return body;
    }
  }
  return WorkerMetricsController;
}
