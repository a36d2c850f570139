import { ClaimedRun, ClaimRequest, TakeRunsRequest, TakeRunsResponse, queueName, queuesOf } from '@nest-durable/common';
import { ClaimRepository, type ClaimParams, ReportRepository } from '@app/run-store';
import { NotificationListener, RUNS_READY_CHANNEL } from '@app/outbox';
import { Inject, Injectable } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { handedBy, WaitingClaims } from '../hand-off/waiting-claims.service';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/**
 * The claim statement found no run for a claim's queues (or a hand-off proved as much) when the
 * listener's RUNS_READY count was `heard`; `until` is when that claim would run its statement again.
 */
interface EmptyCheck {
  heard: number | undefined;
  until: number;
}

/**
 * How workers come to own runs, claims (the HTTP subscriber) and takes (a transport's wake-ups), one statement
 * for both; and how they give them back.
 */
@Injectable()
export class ClaimsService {
  /** By worker and queue set, what its claim that was just handed a run had found (see claim()). */
  private readonly handOffs = new Map<string, EmptyCheck>();

  constructor(
    private readonly claims: ClaimRepository,
    private readonly reports: ReportRepository,
    private readonly listener: NotificationListener,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly metrics: CoordinatorMetrics,
    private readonly waiting: WaitingClaims,
    private readonly lifecycle: RunLifecycle,
  ) {}

  /**
   * Claims up to `limit` runs, long-polling up to `waitMs` when none is ready. It sleeps until a
   * NOTIFY says a run became ready on one of the requested queues, or the due timers say one came
   * due by time, re-checking every claimPollIntervalMs for claims that went idle (and as the
   * timers' safety net). While it waits, it is offered to runs started on this coordinator: a start
   * of one of its queues may hand it the new run directly (WaitingClaims, RunsService.start).
   * `gone()` reports that the caller disconnected: then nothing more is claimed for it.
   *
   * The claim that follows a hand-off (the worker asking again for the same queues) starts by waiting,
   * without running the claim statement, when nothing was announced on RUNS_READY_CHANNEL since the
   * handed claim armed its wait: its statement found nothing, the hand-off's flow_hand_off then found no
   * ready run and no idle claim in these queues (locked rows included), and whatever became ready since
   * would have been announced. It waits no longer than that claim would have before its next re-check
   * (nor past its own deadline), so a claim that went idle is found within CLAIM_POLL_INTERVAL_MS, as by
   * any waiting claim. See docs/architecture.md, "Handing a new run to a waiting claim".
   */
  async claim(request: ClaimRequest, gone: () => boolean): Promise<ClaimedRun[]> {
    const queues = queuesOf(request.workflows);
    const wanted = new Set(queues);
    const claimed = queues.map((queue) => ({ queue, limit: request.limit }));
    const deadline = Date.now() + request.waitMs;
    const key = `${request.workerId}\n${[...queues].sort().join('\n')}`;
    // Only the first pass may start by waiting (see above); any later pass follows a wake-up or a re-check.
    let known = this.afterHandOff(key);
    for (;;) {
      const remaining = deadline - Date.now();
      const heard = this.listener.heard(RUNS_READY_CHANNEL);
      const quiet = known !== undefined && remaining > 0 && known.until > Date.now() && heard !== undefined && heard === known.heard;
      const check: EmptyCheck = quiet && known ? known : { heard, until: Date.now() + Math.min(remaining, this.config.claimPollIntervalMs) };
      known = undefined;
      // Bounded by the poll interval too: a step of the wall clock must not stretch a wait.
      const waitMs = Math.max(1, Math.min(check.until - Date.now(), remaining, this.config.claimPollIntervalMs));
      const wait = remaining > 0 ? this.listener.waitFor(RUNS_READY_CHANNEL, (queue) => wanted.has(queue), waitMs) : undefined;
      let runs: ClaimedRun[] = [];
      try {
        if (gone()) return [];
        if (!quiet) runs = (await this.run({ queues: claimed, limit: request.limit, workerId: request.workerId, buildId: request.buildId ?? null })).runs;
      } catch (error) {
        wait?.cancel();
        throw error;
      }
      if (runs.length > 0 && gone()) {
        // The worker went away while these were being claimed: give them back for others at once.
        wait?.cancel();
        await this.releaseAll(runs);
        return [];
      }
      if (runs.length > 0 || !wait || this.listener.isClosed) {
        wait?.cancel();
        return runs;
      }
      const offer = this.waiting.offer(request, queues, gone);
      await Promise.race([wait.notified, offer.taken]);
      if (offer.withdraw()) continue; // woken, or the poll interval passed: claim again
      wait.cancel();
      const handed = await handedBy(offer, deadline, (run) => this.releaseAll([run]));
      if (handed === undefined) continue; // the start queued its run (or had none, or is late): claim as usual
      if (gone()) {
        await this.releaseAll([handed]);
        return [];
      }
      this.handedOff(key, check);
      return [handed];
    }
  }

  /** What the claim of `key` (worker and queues) that was last handed a run had found: taken by its next claim. */
  private afterHandOff(key: string): EmptyCheck | undefined {
    const checked = this.handOffs.get(key);
    this.handOffs.delete(key);
    return checked;
  }

  private handedOff(key: string, checked: EmptyCheck): void {
    // Entries of workers that never claim again expire: drop them as new ones come.
    for (const [other, { until }] of this.handOffs) if (until <= Date.now()) this.handOffs.delete(other);
    this.handOffs.set(key, checked);
  }

  /**
   * Takes, for wake-ups a transport delivered, up to one run per wake-up of each queue, at once (no
   * waiting). `gone()` as for claims: runs taken for a worker that went away meanwhile are given back.
   */
  async take(request: TakeRunsRequest, gone: () => boolean): Promise<TakeRunsResponse> {
    const queues = new Map<string, string[]>();
    for (const ref of request.workflows) {
      const queue = queueName(ref.name, ref.version, ref.shard);
      queues.set(queue, [...(queues.get(queue) ?? []), ...ref.wakeups]);
    }
    const wanted = [...queues].map(([queue, wakeups]) => ({ queue, limit: wakeups.length, wakeups }));
    const { runs, requeue } = await this.run({
      queues: wanted,
      limit: wanted.reduce((sum, q) => sum + q.limit, 0),
      workerId: request.workerId,
      buildId: request.buildId ?? null,
    });
    if (runs.length > 0 && gone()) {
      await this.releaseAll(runs);
      return { runs: [], requeue: [] };
    }
    return { runs, requeue };
  }

  private async run(params: Pick<ClaimParams, 'queues' | 'limit' | 'workerId' | 'buildId'>): Promise<TakeRunsResponse> {
    const startedAt = performance.now();
    const { runs, stalled, requeue } = await this.claims.claim({
      ...params,
      claimMinIdleTimeMs: this.config.claimMinIdleTimeMs,
      maxStalls: this.config.maxStalls,
    });
    if (stalled.length > 0) this.lifecycle.failedForStalls(stalled);
    return { runs: this.metrics.taken(runs, startedAt), requeue };
  }

  /** Gives the run back (worker shutting down) so another worker takes it at once. */
  release(runId: string, expectedRevision: number): Promise<{ revision: number }> {
    return this.reports.release(runId, expectedRevision);
  }

  /** Gives runs back for others at once (their worker went away while they were being taken for it). */
  private async releaseAll(runs: ClaimedRun[]): Promise<void> {
    await Promise.all(runs.map((run) => this.reports.release(run.id, run.revision).catch(() => undefined)));
  }
}
