import { MetricsService } from '@app/metrics';
import { Injectable } from '@nestjs/common';
import { RunWeeksRepository } from './run-weeks.repository';

/** How far ahead the run tables' weeks are made, and the partition manager's rounds that failed. */
@Injectable()
export class RunWeeksMetrics {
  readonly failures;

  constructor(metrics: MetricsService, repository: RunWeeksRepository) {
    // Read from the catalog at each scrape, on every coordinator (a few rows): what holds, whoever leads.
    metrics.gauge(
      'run_weeks_ahead_seconds',
      'How far ahead of now the run tables have weeks (partitions) made: a run id past them cannot be inserted. The leader keeps four weeks made; alert well before this reaches 0',
      () =>
        repository.weeksEnd().then(
          (end) => (end.getTime() - Date.now()) / 1000,
          () => Number.NaN,
        ),
    );
    this.failures = metrics.counter(
      'run_weeks_failures_total',
      "Rounds of the run tables' partition manager that failed (each is tried again at the next interval)",
    );
  }
}
