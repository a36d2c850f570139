import { MetricsService } from '@app/metrics';
import { OutboxEnqueuer, OutboxRepository, type OutboxStats } from '@app/outbox';
import { Injectable } from '@nestjs/common';

/** Outbox series: counters kept by the enqueuer, backlog and dead letters read from the table at scrape. */
@Injectable()
export class OutboxMetrics {
  constructor(metrics: MetricsService, enqueuer: OutboxEnqueuer, repository: OutboxRepository) {
    const { counters } = enqueuer;
    metrics.externalCounter('outbox_processed_total', 'Outbox rows published', () => counters.processed);
    metrics.externalCounter('outbox_failed_total', 'Outbox publish attempts that failed', () => counters.failed);
    metrics.externalCounter('outbox_dead_lettered_total', 'Outbox rows moved to the dead-letter table', () => counters.deadLettered);
    metrics.gauge('outbox_in_flight', 'Outbox rows being published by this coordinator', () => counters.inFlight);
    // One query serves the three table gauges of a scrape (they are collected together).
    let pending: Promise<OutboxStats> | undefined;
    const stats = () => {
      pending ??= repository.stats().finally(() => setImmediate(() => (pending = undefined)));
      return pending;
    };
    metrics.gauge('outbox_backlog', 'Outbox rows due for publishing', async () => (await stats()).backlog);
    metrics.gauge('outbox_backlog_age_seconds', 'How long the oldest due outbox row has waited', async () => (await stats()).backlogAgeSeconds);
    metrics.gauge('outbox_dead_letters', 'Dead letters (of every origin: see GET /v1/dead-letters)', async () => (await stats()).deadLetters);
  }
}
