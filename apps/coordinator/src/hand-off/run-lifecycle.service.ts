import { type ClaimedRun, type JsonValue, queueName } from '@nest-durable/common';
import { type FinishedRun, type HandOffTarget, type NewRun, ReportRepository, type StartedRun } from '@app/run-store';
import { NotificationListener, OutboxEnqueuer, RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import type { RunEntity } from '@app/persistence';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { type Finishing, ResultWaits } from './result-waits.service';
import { type WaitingClaim, WaitingClaims } from './waiting-claims.service';

/** A claim a start took to hand its run to, as the start statement is told of it (RunControlRepository.start's `handedTo`). */
export interface HandOff extends HandOffTarget {
  readonly claim: WaitingClaim;
}

/** A run a worker's report ended; `run` is the ended run when its finish statement returned it (see Finishing.returnsRun). */
export interface EndedRun {
  runId: string;
  status: 'completed' | 'failed';
  workflow: string;
  run?: FinishedRun;
}

/**
 * The one place that reacts, in this process, when runs start, come due or end. Whoever made it happen
 * tells it what happened; what follows on this coordinator is decided here:
 *
 * - A single start of a run due now (`handOffFor`, before its statement) takes the claim that has waited here
 *   longest for its queue, for the statement to hand the run to; `started` or `startFailed` settles it.
 * - A start statement committed, its own transaction (`started`): the wake-ups it wrote taken are published,
 *   its runs counted, and this coordinator's claim long-polls of the queues that got runs due now woken.
 * - Runs came due by time (`becameReady`, told by the due timers): that many claim long-polls of their queues woken.
 * - A worker's report may end runs (`finishing`, while its statements are made) and did (`finished`, once it
 *   committed): the ended run handed to the waits for its result here, the result long-polls woken, counted.
 * - Counted only: runs started inside a larger transaction (`startedInTransaction`, a schedule firing: no
 *   client waits on it), runs a claim statement failed for stalls (`failedForStalls`), cancels (`cancelled`).
 *
 * The statements that do these things also NOTIFY at commit (wf_runs_ready, wf_run_finished), which wakes
 * every coordinator's long-polls, this one's again (harmlessly: a claim that finds nothing waits again), and
 * in the Redis modes the enqueue trigger writes the outbox row of every run made ready that a start did not
 * publish itself. Every other statement that makes a run ready or ends it (an event, a wake, a retry, a
 * child's end, a release, a redrive, a resume) relies on those alone: nothing here reacts to it.
 */
@Injectable()
export class RunLifecycle {
  private readonly logger = new Logger(RunLifecycle.name);
  /**
   * Whether a start statement writes its runs' outbox rows itself and has them published here as soon as it
   * committed (RunControlRepository.start with `publish`): with a publisher (DISPATCH other than none).
   */
  readonly startsPublish: boolean;

  constructor(
    private readonly waitingClaims: WaitingClaims,
    private readonly resultWaits: ResultWaits,
    private readonly listener: NotificationListener,
    private readonly metrics: CoordinatorMetrics,
    private readonly reports: ReportRepository,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Optional() private readonly outbox?: OutboxEnqueuer,
  ) {
    this.startsPublish = outbox !== undefined;
  }

  /**
   * Before a single start's statement: the claim waiting here for the run's queue that the statement may hand
   * the run to, when the run is due now (taken for this start, which must settle it: call `started` or
   * `startFailed`). A batch start hands nothing.
   */
  handOffFor(run: NewRun): HandOff | undefined {
    if (run.runAt !== null && run.runAt.getTime() > Date.now()) return undefined;
    const claim = this.waitingClaims.take(queueName(run.workflow, run.version, run.shard ?? undefined));
    return claim && { workerId: claim.workerId, buildId: claim.buildId, queues: claim.queues, claimMinIdleTimeMs: this.config.claimMinIdleTimeMs, claim };
  }

  /**
   * The start statement of `run` (with `handOff`) failed. It may have committed before its answer was lost: a
   * run handed to the claim, which is told nothing, would wait for the idle timeout. It is given back (fenced
   * at revision 1: a no-op otherwise), and the claim settled with nothing, to claim as usual.
   */
  startFailed(run: NewRun, handOff: HandOff | undefined): void {
    if (!handOff) return;
    void this.reports.release(run.id, 1).catch(() => undefined);
    handOff.claim.settle(undefined);
  }

  /**
   * A start statement, its own transaction, committed these runs (RunControlRepository.start). Settles the
   * start's claim with the run the statement handed it, if any, publishes the wake-ups the statement took, then
   * counts the runs and wakes this coordinator's claim long-polls of the queues that got runs due now.
   *
   * The worker handed a run is on its critical path, the client's answer is not: the claim answers first.
   * When a run was handed over, the rest waits a turn of the event loop, and so must the start's answer:
   * `started` returns that turn to await (undefined otherwise: nothing to wait for).
   */
  started(runs: Map<string, StartedRun>, handOff: HandOff | undefined): Promise<void> | undefined {
    const handed = handOff !== undefined && this.handOver(runs, handOff.claim);
    this.publish(runs.values());
    if (handed) return this.afterClaimAnswered(runs);
    this.countAndWake(runs);
    return undefined;
  }

  /**
   * Runs a larger transaction started, once it committed (a schedule firing). Counted only: their statement's
   * NOTIFY wakes the claim long-polls and the enqueue trigger wrote their outbox rows (nothing may be published
   * before such a commit); the wake-up here saves a client's start that round trip, and no client waits on these.
   */
  startedInTransaction(workflow: string, runs: number): void {
    this.metrics.runsStarted.inc({ workflow }, runs);
  }

  /**
   * Runs became ready, by queue (the due timers: they came due by time): wakes as many of this coordinator's
   * claim long-polls of each, those waiting longest first (not all of them: no herd).
   */
  becameReady(perQueue: Map<string, number>): void {
    for (const [queue, runs] of perQueue) this.listener.wake(RUNS_READY_CHANNEL, queue, runs);
  }

  /** Marks these runs as being ended by a request here, until its `end()`: see Finishing. */
  finishing(runIds: Iterable<string>): Finishing {
    return this.resultWaits.finishing(runIds);
  }

  /**
   * A worker's report ended the run, and its finish committed (`finishing` marked it): hands the run to this
   * coordinator's waits for its result when the finish returned it (Finishing.ended), counts it, and wakes the
   * result long-polls here at once instead of when the finish's NOTIFY comes back through the LISTEN session.
   * Returns how many waits it ended: those armed while the finish was under way and those already woken.
   */
  finished(ended: EndedRun, finishing: Finishing): number {
    const handed = finishing.ended(ended.runId, ended.run);
    if (ended.status === 'completed') this.metrics.runsCompleted.inc({ workflow: ended.workflow });
    else this.metrics.runsFailed.inc({ workflow: ended.workflow });
    return handed + this.listener.wake(RUN_FINISHED_CHANNEL, ended.runId, Number.POSITIVE_INFINITY);
  }

  /** A claim statement failed these runs, which stalled more than MAX_STALLS times (its NOTIFY wakes their result long-polls). */
  failedForStalls(runs: readonly { id: string; workflow: string }[]): void {
    for (const run of runs) {
      this.metrics.runsFailed.inc({ workflow: run.workflow });
      this.logger.warn('run failed: it stalled more than MAX_STALLS times', { runId: run.id, workflow: run.workflow, maxStalls: this.config.maxStalls });
    }
  }

  /** A client's cancel (or a schedule's overlap policy) cancelled a run. */
  cancelled(): void {
    this.metrics.runsCancelled.inc();
  }

  /** Settles the claim with the run the statement started running for it, if any; whether there was one. */
  private handOver(runs: Map<string, StartedRun>, claim: WaitingClaim): boolean {
    let handed: ClaimedRun | undefined;
    try {
      for (const run of runs.values()) {
        if (run.status !== 'running') continue;
        handed = toClaimedRun(run);
        this.metrics.handedOff();
        break;
      }
    } finally {
      claim.settle(handed);
    }
    return handed !== undefined;
  }

  private async afterClaimAnswered(runs: Map<string, StartedRun>): Promise<void> {
    await nextTurn();
    this.countAndWake(runs);
  }

  /**
   * Publishes the wake-ups of the runs due now that the start statement wrote taken (RunControlRepository.start
   * with `publish`), as soon as it committed: no enqueuer's batch statement in between. Not awaited: the
   * client's answer does not wait for Redis, and a publish that fails is retried from the outbox (the rows
   * it could not settle stay in_flight, for maintenance to return to retry).
   */
  private publish(started: Iterable<StartedRun>): void {
    if (!this.outbox) return;
    const rows = [...started].flatMap((run) => (run.outboxId ? [{ id: run.outboxId, runId: run.id, queue: run.queue, attemptCount: 1 }] : []));
    if (rows.length === 0) return;
    this.outbox
      .publishTaken(rows)
      .catch((error: Error) => this.logger.warn(`publishing started runs' wake-ups failed (the outbox retries them): ${error.message}`));
  }

  /**
   * Counts the started runs, and wakes this coordinator's long-poll claims of the queues that got a run due now
   * at once, instead of when the start's NOTIFY comes back through the LISTEN session. That NOTIFY still wakes
   * every coordinator's, this one's again: a claim that finds nothing waits again. (Its outbox has nothing to
   * wake: a start publishes its wake-ups itself.)
   */
  private countAndWake(runs: Map<string, StartedRun>): void {
    for (const run of runs.values()) this.metrics.runsStarted.inc({ workflow: run.workflow });
    const now = Date.now();
    const due = new Map<string, number>();
    for (const run of runs.values()) {
      if (run.status === 'queued' && run.dueAt instanceof Date && run.dueAt.getTime() <= now) due.set(run.queue, (due.get(run.queue) ?? 0) + 1);
    }
    this.becameReady(due);
  }
}

/** A run handed to a claim at its start, as a claim returns it (a new run has no steps yet). */
function toClaimedRun(run: RunEntity): ClaimedRun {
  return {
    id: run.id,
    workflow: run.workflow,
    version: run.version,
    queue: run.queue,
    revision: run.revision,
    attempt: run.attempt,
    input: run.input as JsonValue,
    tasks: [],
    ...(run.traceparent === null ? {} : { traceparent: run.traceparent }),
    ...(run.tracestate === null ? {} : { tracestate: run.tracestate }),
  };
}
