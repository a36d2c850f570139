import { MetricsService } from '@app/metrics';
import { Injectable } from '@nestjs/common';

/**
 * What retention deleted, by kind: `runs` (each with its steps, transitions and events), `outbox`, `dead_letters`;
 * its sweeps that failed; and how far behind it is (set by the daemon after each batch of runs, on the coordinator
 * leading retention).
 */
@Injectable()
export class RetentionMetrics {
  readonly deleted;
  /** A sweep that fails leaves the overdue gauge where it was: this is what shows retention stalled. */
  readonly failures;
  /** How far past its window the most overdue run of the latest batch was (s); 0 once a sweep found no more. */
  overdueSeconds = 0;

  constructor(metrics: MetricsService) {
    metrics.gauge(
      'retention_overdue_seconds',
      "How far past its window the most overdue run of retention's latest batch was; 0 once a sweep deleted all it found. Grows while retention does not keep pace",
      () => this.overdueSeconds,
    );
    this.deleted = metrics.counter('retention_deleted_total', 'Rows deleted by retention, by kind (runs count with their steps, transitions and events)', [
      'kind',
    ]);
    this.failures = metrics.counter('retention_failures_total', 'Retention sweeps that failed (each is tried again at the next interval)');
  }
}
