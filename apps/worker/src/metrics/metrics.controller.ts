import { MetricsService } from '@app/metrics';
import { FailoverSubscriber, type Subscriber, SUBSCRIBER, WorkerRuntime } from '@nest-durable/worker';
import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

/** The worker's Prometheus series, read from the runtime's and the subscriber's counters at scrape. */
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    runtime: WorkerRuntime,
    @Inject(SUBSCRIBER) subscriber: Subscriber,
  ) {
    const failover = subscriber instanceof FailoverSubscriber ? subscriber : undefined;
    const primary = (failover?.primary ?? subscriber) as Subscriber & { stale?: number };
    metrics.gauge('worker_runs_active', 'Runs this worker holds: executing, or reporting their outcome', () => runtime.activeRuns);
    metrics.externalCounter('worker_runs_taken_total', 'Runs this worker took', () => [...runtime.counters.taken.values()].reduce((sum, n) => sum + n, 0));
    metrics.externalCounter('worker_heartbeats_total', 'Claims refreshed by this worker', () => runtime.counters.heartbeats);
    metrics.externalCounter('worker_subscriber_failovers_total', 'Switches from the primary subscriber to the HTTP backup', () => failover?.failovers ?? 0);
    metrics.externalCounter(
      'worker_stale_deliveries_total',
      'Wake-ups that took no run (the work they announced was taken another way)',
      () => primary.stale ?? 0,
    );
    metrics.gauge('worker_subscriber_on_backup', '1 while the worker takes work from its HTTP backup', () => (failover?.usingBackup ? 1 : 0));
  }

  @Get()
  @Header('cache-control', 'no-store')
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    reply.type(contentType).send(body);
  }
}
