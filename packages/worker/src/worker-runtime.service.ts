import { CLAIM_LIMIT_MAX, type ClaimedRun } from '@nest-durable/common';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { delivery, SUBSCRIBER, type Subscriber } from './subscribers/subscriber.interface';
import { CoordinatorApi } from './coordinator.api';
import { RegistrationGate } from './registration-gate';
import { RunExecutor } from './run-executor';
import { RunLease } from '@app/locking';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';

/** A heartbeat gets at least this long (or three intervals) to answer before it counts as failed. */
const HEARTBEAT_MIN_DEADLINE_MS = 10_000;

/**
 * The worker's main loop: asks the subscriber for as many runs as it has free slots, executes
 * them concurrently, and keeps their claims alive with heartbeats (one request for all runs). A slot
 * is a handler's: it is free again once the handler is done, while its run's outcome is being reported.
 */
@Injectable()
export class WorkerRuntime implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkerRuntime.name);
  /**
   * Executions in progress, by run id and the revision it was taken at: an older execution of a run
   * taken again (lost, but still unwinding) keeps its slot until it ends.
   */
  private readonly active = new Map<string, { lease: RunLease; done: Promise<void> }>();
  /**
   * Of `active`, the runs whose handler is done and whose outcome is on its way (RunLease.reportOutcome).
   * They hold no slot: the worker claims their successors while the outcomes are being written, instead of
   * one after the other. At most `concurrency` of them count so, so a coordinator slow to answer reports
   * still holds the worker back (at most twice `concurrency` runs in `active`).
   */
  private outcomesInFlight = 0;
  private readonly stopping = new AbortController();
  private slotFreed: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** The heartbeat request in flight, if any: there is at most one per worker. */
  private heartbeating: Promise<void> | undefined;
  /** When the current read from the subscriber began (undefined between reads). */
  private readingSince: number | undefined;
  private loopEnded = false;
  /** Plain counters, exported as metrics by the app. */
  readonly counters = { taken: new Map<string, number>(), heartbeats: 0 };

  constructor(
    @Inject(SUBSCRIBER) private readonly subscriber: Subscriber,
    private readonly executor: RunExecutor,
    private readonly api: CoordinatorApi,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly gate: RegistrationGate,
  ) {}

  onApplicationBootstrap(): void {
    this.loop = this.consume().finally(() => (this.loopEnded = true));
    this.heartbeatTimer = setInterval(() => this.heartbeatTick(), this.options.heartbeatIntervalMs);
    this.logger.log(`worker ${this.options.workerId} started (build ${this.options.buildId}, concurrency ${this.options.concurrency})`);
  }

  /**
   * Stops taking work, lets running runs finish within the grace period, then releases the rest
   * so another worker takes them at once (rather than after the claim idle timeout). A run whose outcome
   * (or suspension) is on its way is not released: that write's own answer ends it, and a release racing
   * it would either be refused or, landing first, have a run that is done executed again elsewhere.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    this.slotFreed?.();
    await this.loop;
    const running = [...this.active.values()].map((entry) => entry.done);
    if (running.length > 0) {
      this.logger.log(`waiting up to ${this.options.shutdownGraceMs} ms for ${running.length} running run(s)`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(running), new Promise((resolve) => (timer = setTimeout(resolve, this.options.shutdownGraceMs)))]);
      clearTimeout(timer);
    }
    const unfinished = [...this.active.values()].map((entry) => entry.lease).filter((lease) => lease.needsHeartbeat);
    for (const lease of unfinished) lease.lose('the worker is shutting down');
    await Promise.all(unfinished.map((lease) => this.release(lease)));
    clearInterval(this.heartbeatTimer);
    await this.heartbeating;
    await this.subscriber.close?.();
  }

  /** Runs this worker holds now: executing, or done and reporting their outcome. */
  get activeRuns(): number {
    return this.active.size;
  }

  /** Runs whose handler is executing now (at most `concurrency`). */
  get executingRuns(): number {
    return this.active.size - this.outcomesInFlight;
  }

  /**
   * Whether the consume loop is making progress: it is running (not ended), and its current read
   * has not been stuck longer than a read can take (a hung blocking read or long-poll). A worker
   * whose slots are all busy is making progress.
   */
  progress(): { healthy: boolean; detail: string } {
    if (this.loopEnded && !this.stopping.signal.aborted) return { healthy: false, detail: 'the consume loop has ended' };
    const stuckMs = this.readingSince === undefined ? 0 : Date.now() - this.readingSince;
    const limitMs = this.options.claimWaitMs + 30_000;
    if (stuckMs > limitMs) return { healthy: false, detail: `a read from ${this.subscriber.name} has been waiting ${stuckMs} ms` };
    return { healthy: true, detail: `${this.active.size} running, reading from ${this.subscriber.name}` };
  }

  private async consume(): Promise<void> {
    let failures = 0;
    const signal = this.stopping.signal;
    if (this.gate.waits) {
      // Counted as a read: a worker whose registration never lands shows as stuck in its health.
      this.readingSince = Date.now();
      await Promise.race([this.gate.opened, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
      this.readingSince = undefined;
    }
    while (!signal.aborted) {
      // A claim or take hands out at most CLAIM_LIMIT_MAX runs: ask for no more, whatever the concurrency.
      const { concurrency } = this.options;
      const free = Math.min(concurrency - this.active.size + Math.min(this.outcomesInFlight, concurrency), CLAIM_LIMIT_MAX);
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      let runs: ClaimedRun[];
      this.readingSince = Date.now();
      try {
        runs = await this.subscriber.getReadyRuns(free, signal);
        failures = 0;
      } catch (error) {
        this.readingSince = undefined;
        if (signal.aborted) break;
        failures++;
        const delayMs = this.subscriber.getNextDelay({ type: 'retry', attempt: failures });
        this.logger.warn(`getting work failed (${(error as Error).message}); retrying in ${delayMs} ms`);
        await sleep(delayMs, signal);
        continue;
      }
      this.readingSince = undefined;
      for (const run of runs) this.start(run);
      if (runs.length === 0) await sleep(this.subscriber.getNextDelay({ type: 'no_work' }), signal);
    }
  }

  private start(run: ClaimedRun): void {
    this.counters.taken.set(run.workflow, (this.counters.taken.get(run.workflow) ?? 0) + 1);
    const lease = new RunLease(run.id, run.revision, () => {
      this.outcomesInFlight++;
      this.wakeForSlot();
    });
    const key = delivery(run.id, run.revision);
    const done = this.executor
      .execute(run, lease)
      .catch((error: unknown) => this.logger.error('run failed unexpectedly in the worker', { runId: run.id, error: (error as Error).message }))
      .then(() => this.subscriber.acknowledge?.(run.id, run.revision))
      .catch((error: unknown) => this.logger.warn('acknowledging a run failed', { runId: run.id, error: (error as Error).message }))
      .finally(() => {
        this.active.delete(key);
        if (lease.isReportingOutcome) this.outcomesInFlight--;
        this.wakeForSlot();
      });
    this.active.set(key, { lease, done });
  }

  private wakeForSlot(): void {
    const wake = this.slotFreed;
    this.slotFreed = undefined;
    wake?.();
  }

  private async release(lease: RunLease): Promise<void> {
    try {
      await this.api.release(lease.runId, lease.revision);
      this.logger.log('run released for another worker', { runId: lease.runId, workerId: this.options.workerId });
    } catch (error) {
      this.logger.warn('releasing a run failed; it is taken over after the claim idle timeout', {
        runId: lease.runId,
        workerId: this.options.workerId,
        error: (error as Error).message,
      });
    }
  }

  /**
   * A heartbeat still in flight when the next is due is not joined by another: the two would carry
   * the same runs, and the later one adds load just when the coordinator is slow.
   */
  private heartbeatTick(): void {
    if (this.heartbeating) return;
    this.heartbeating = this.heartbeat().finally(() => (this.heartbeating = undefined));
  }

  private async heartbeat(): Promise<void> {
    const leases = [...this.active.values()].map((entry) => entry.lease).filter((lease) => lease.needsHeartbeat);
    if (leases.length === 0) return;
    try {
      const deadline = AbortSignal.timeout(Math.max(HEARTBEAT_MIN_DEADLINE_MS, 3 * this.options.heartbeatIntervalMs));
      const lost = new Set(
        await this.api.heartbeat(
          leases.map((lease) => ({ id: lease.runId, expectedRevision: lease.revision })),
          deadline,
        ),
      );
      this.counters.heartbeats += leases.length - lost.size;
      for (const lease of leases) {
        // A run this worker began to finish or suspend meanwhile is lost to that write, not to another owner.
        if (lost.has(lease.runId) && lease.needsHeartbeat) {
          this.logger.warn('claim lost (taken over or cancelled); stopping the run', { runId: lease.runId, workerId: this.options.workerId });
          lease.lose('heartbeat refused: the run was taken over or cancelled');
        }
      }
    } catch (error) {
      this.logger.warn(`heartbeat failed: ${(error as Error).message}`);
    }
    // Beside the coordinator's, whether or not that one got through: while the coordinator is out of
    // reach, the transport must not take this worker for dead as well.
    try {
      if (this.subscriber.heartbeat) {
        await Promise.all(leases.filter((lease) => lease.isHeld).map((lease) => this.subscriber.heartbeat!(lease.runId, lease.revision)));
      }
    } catch (error) {
      this.logger.warn(`subscriber heartbeat failed: ${(error as Error).message}`);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
