import type { ClaimedRun } from '@nest-durable/common';
import type { TakenRun } from '@app/run-store';
import { LATENCY_BUCKETS, MetricsService } from '@app/metrics';
import { Injectable } from '@nestjs/common';

/** The coordinator's own series (the outbox adds its own in dispatch/outbox.metrics.ts). */
@Injectable()
export class CoordinatorMetrics {
  readonly runsStarted;
  readonly runsCompleted;
  readonly runsFailed;
  readonly runsCancelled;
  readonly dispatchLatency;
  readonly claimDuration;
  readonly runsHandedOff;
  readonly revisionConflicts;
  readonly heartbeats;
  readonly httpRequests;
  readonly scheduleFireLateness;
  readonly scheduleOverlapsSkipped;

  constructor(metrics: MetricsService) {
    this.runsStarted = metrics.counter('runs_started_total', 'Runs started, by workflow', ['workflow']);
    this.runsCompleted = metrics.counter('runs_completed_total', 'Runs completed, by workflow', ['workflow']);
    this.runsFailed = metrics.counter('runs_failed_total', 'Runs failed for good, by workflow', ['workflow']);
    this.runsCancelled = metrics.counter('runs_cancelled_total', 'Runs cancelled by a client');
    this.dispatchLatency = metrics.histogram(
      'dispatch_latency_seconds',
      'From a run becoming ready (started, woken, released) to a worker taking it',
      LATENCY_BUCKETS,
    );
    this.claimDuration = metrics.histogram('claim_duration_seconds', 'Time of one claim or take statement', LATENCY_BUCKETS);
    this.runsHandedOff = metrics.counter('runs_handed_off_total', 'Runs handed to a waiting claim by their start, never queued');
    this.revisionConflicts = metrics.counter('revision_conflicts_total', 'Worker writes refused because the run moved on (409)');
    this.heartbeats = metrics.counter('heartbeats_total', 'Claims refreshed by worker heartbeats');
    this.httpRequests = metrics.counter('http_requests_total', 'HTTP requests received');
    this.scheduleFireLateness = metrics.histogram(
      'schedule_fire_lateness_seconds',
      'From a schedule fire time to the firing that acted on it',
      LATENCY_BUCKETS,
    );
    this.scheduleOverlapsSkipped = metrics.counter(
      'schedule_overlaps_skipped_total',
      'Schedule fire times that started no run: the previous run was unfinished',
    );
  }

  /** A run its start handed to a waiting claim: taken the moment it became ready. */
  handedOff(): void {
    this.runsHandedOff.inc();
    this.dispatchLatency.observe(0);
  }

  /** Records how long the runs waited and strips that bookkeeping from what the worker gets. */
  taken(runs: TakenRun[], startedAt: number): ClaimedRun[] {
    if (runs.length > 0) this.claimDuration.observe((performance.now() - startedAt) / 1000);
    return runs.map(({ readyForSeconds, ...run }) => {
      if (readyForSeconds !== null) this.dispatchLatency.observe(Math.max(0, readyForSeconds));
      return run;
    });
  }
}
