import { MetricsService } from '@app/metrics';
import { Injectable } from '@nestjs/common';

/** What retention deleted, by kind: `runs` (each with its steps, transitions and events), `outbox`, `dead_letters`. */
@Injectable()
export class RetentionMetrics {
  readonly deleted;

  constructor(metrics: MetricsService) {
    this.deleted = metrics.counter('retention_deleted_total', 'Rows deleted by retention, by kind (runs count with their steps, transitions and events)', [
      'kind',
    ]);
  }
}
