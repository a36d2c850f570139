import { ClaimedRun, ClaimRequest, TakeRunsRequest, TakeRunsResponse, queueName } from '@nest-durable/client';
import { ClaimRepository, type ClaimParams, ReportRepository } from '@app/locking';
import { NotificationListener, RUNS_READY_CHANNEL } from '@app/outbox';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { type ClaimOffer, WaitingClaims } from '../hand-off/waiting-claims.service';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/** How workers come to own runs: claims (the HTTP subscriber) and takes (a transport's wake-ups), one statement for both. */
@Injectable()
export class ClaimsService {
  private readonly logger = new Logger(ClaimsService.name);

  constructor(
    private readonly claims: ClaimRepository,
    private readonly reports: ReportRepository,
    private readonly listener: NotificationListener,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly metrics: CoordinatorMetrics,
    private readonly waiting: WaitingClaims,
  ) {}

  /**
   * Claims up to `limit` runs, long-polling up to `waitMs` when none is ready. It sleeps until a
   * NOTIFY says a run became ready on one of the requested queues, or the due timers say one came
   * due by time, re-checking every claimPollIntervalMs for claims that went idle (and as the
   * timers' safety net). While it waits, it is offered to runs started on this coordinator: a start
   * of one of its queues may hand it the new run directly (WaitingClaims, RunsService.start).
   * `gone()` reports that the caller disconnected: then nothing more is claimed for it.
   */
  async claim(request: ClaimRequest, gone: () => boolean): Promise<ClaimedRun[]> {
    const queues = [...new Set(request.workflows.map((workflow) => queueName(workflow.name, workflow.version, workflow.shard)))];
    const wanted = new Set(queues);
    const deadline = Date.now() + request.waitMs;
    for (;;) {
      const remaining = deadline - Date.now();
      const wait =
        remaining > 0
          ? this.listener.waitFor(RUNS_READY_CHANNEL, (queue) => wanted.has(queue), Math.min(remaining, this.config.claimPollIntervalMs))
          : undefined;
      let runs: ClaimedRun[];
      try {
        if (gone()) return [];
        ({ runs } = await this.run({ queues: queues.map((queue) => ({ queue, limit: request.limit })), limit: request.limit, workerId: request.workerId }));
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
      const offer = this.waiting.offer(request.workerId, queues, gone);
      await Promise.race([wait.notified, offer.taken]);
      if (offer.withdraw()) continue; // woken, or the poll interval passed: claim again
      wait.cancel();
      const handed = await this.handedBy(offer, deadline);
      if (handed === undefined) continue; // the start queued its run (or had none, or is late): claim as usual
      if (gone()) {
        await this.releaseAll([handed]);
        return [];
      }
      return [handed];
    }
  }

  /**
   * What the start that took the offer handed over, waiting for it no longer than the claim's own
   * deadline (a start can wait on a pool connection or an admission lock). A run handed over after that
   * is given back at once: the claim has answered without it.
   */
  private async handedBy(offer: ClaimOffer, deadline: number): Promise<ClaimedRun | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()))));
    const handed = await Promise.race([offer.handed, late]);
    clearTimeout(timer);
    if (handed !== 'late') return handed;
    void offer.handed.then((run) => run && this.releaseAll([run]));
    return undefined;
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
    const { runs, requeue } = await this.run({ queues: wanted, limit: wanted.reduce((sum, q) => sum + q.limit, 0), workerId: request.workerId });
    if (runs.length > 0 && gone()) {
      await this.releaseAll(runs);
      return { runs: [], requeue: [] };
    }
    return { runs, requeue };
  }

  private async run(params: Pick<ClaimParams, 'queues' | 'limit' | 'workerId'>): Promise<TakeRunsResponse> {
    const startedAt = performance.now();
    const { runs, stalled, requeue } = await this.claims.claim({
      ...params,
      claimMinIdleTimeMs: this.config.claimMinIdleTimeMs,
      maxStalls: this.config.maxStalls,
    });
    for (const run of stalled) {
      this.metrics.runsFailed.inc({ workflow: run.workflow });
      this.logger.warn('run failed: it stalled more than MAX_STALLS times', { runId: run.id, workflow: run.workflow, maxStalls: this.config.maxStalls });
    }
    return { runs: this.metrics.taken(runs, startedAt), requeue };
  }

  /** Gives runs back for others at once (their worker went away while they were being taken for it). */
  private async releaseAll(runs: ClaimedRun[]): Promise<void> {
    await Promise.all(runs.map((run) => this.reports.release(run.id, run.revision).catch(() => undefined)));
  }
}
