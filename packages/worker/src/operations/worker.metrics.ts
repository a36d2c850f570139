import { MetricsService } from '@app/metrics';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { FailoverSubscriber } from '../subscribers/failover.subscriber';
import { SUBSCRIBER, type Subscriber } from '../subscribers/subscriber.interface';
import { WorkerRuntime } from '../worker-runtime.service';
import { workerProvided } from './provided-in-app';

/** The worker's Prometheus series (`wf_worker_*`), read from the runtime's and the subscriber's counters at scrape. */
@Injectable()
export class WorkerMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The registry's text and its content type, for the metrics endpoint. */
  text(): Promise<{ contentType: string; body: string }> {
    return this.metrics.text();
  }

  onModuleInit(): void {
    const { metrics } = this;
    const runtime = workerProvided(this.moduleRef, WorkerRuntime);
    const subscriber = workerProvided<Subscriber>(this.moduleRef, SUBSCRIBER);
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
}
