import {
  type ClaimedRun,
  EventAccepted,
  InvalidRequestError,
  isTerminalStatus,
  JsonValue,
  ListRunsQuery,
  RunAlreadyTerminalError,
  RunNotFoundError,
  RunNotSleepingError,
  RunNotFailedError,
  RunPage,
  RunTransitions,
  RunView,
  StartRunRequest,
  type RunTransitionsQuery,
  queueName,
} from '@nest-durable/common';
import { ControlOutcome, type NewRun, ReportRepository, RunControlRepository, type StartedRun } from '@app/run-store';
import { NotificationListener, OutboxEnqueuer, RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import { RunEntity, uuidv7 } from '@app/persistence';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { ResultWaits } from '../hand-off/result-waits.service';
import { type WaitingClaim, WaitingClaims } from '../hand-off/waiting-claims.service';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { RunsRepository } from './runs.repository';
import { toClaimedRun, toRunView } from './run-view';

function newRun(request: StartRunRequest): NewRun {
  return {
    id: uuidv7(),
    workflow: request.workflow,
    version: request.version,
    shard: request.shard ?? null,
    input: request.input,
    priority: request.priority,
    idempotencyKey: request.idempotencyKey ?? null,
    runAt: request.runAt ?? null,
    parentId: null,
    concurrencyKey: request.concurrencyKey ?? null,
    tags: request.tags ?? {},
  };
}

@Injectable()
export class RunsService {
  private readonly logger = new Logger(RunsService.name);

  constructor(
    private readonly repository: RunsRepository,
    private readonly control: RunControlRepository,
    private readonly listener: NotificationListener,
    private readonly metrics: CoordinatorMetrics,
    private readonly waitingClaims: WaitingClaims,
    private readonly resultWaits: ResultWaits,
    private readonly reports: ReportRepository,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    /** With a publisher (DISPATCH other than none): starts publish their runs' wake-ups themselves. */
    @Optional() private readonly outbox?: OutboxEnqueuer,
  ) {}

  /**
   * Starts a run; with a known idempotency key returns the existing run (`created: false`). A run due
   * now whose queue has a claim waiting on this coordinator goes straight to that claim when it may
   * (RunControlRepository.start with `handedTo`): it is started running, in one commit.
   */
  async start(request: StartRunRequest): Promise<{ run: RunView; created: boolean }> {
    const run = newRun(request);
    const dueNow = run.runAt === null || run.runAt.getTime() <= Date.now();
    const claim = dueNow ? this.waitingClaims.take(queueName(run.workflow, run.version, run.shard ?? undefined)) : undefined;
    const [started] = await this.insert([run], claim);
    return started;
  }

  /**
   * Starts runs in one transaction (one NOTIFY per queue). A run whose idempotency key exists comes
   * back as the existing run. Results are in request order.
   */
  startMany(requests: StartRunRequest[]): Promise<{ run: RunView; created: boolean }[]> {
    return this.insert(requests.map(newRun));
  }

  /** Inserts the runs (handing one to `claim`, which it settles whatever happens) and views them. */
  private async insert(runs: NewRun[], claim?: WaitingClaim): Promise<{ run: RunView; created: boolean }[]> {
    let inserted: Map<string, StartedRun>;
    let handed: ClaimedRun | undefined;
    try {
      inserted = await this.control.start(
        runs,
        undefined,
        claim && { workerId: claim.workerId, queues: claim.queues, claimMinIdleTimeMs: this.config.claimMinIdleTimeMs },
        this.outbox !== undefined,
      );
      const run = claim ? [...inserted.values()].find((row) => row.status === 'running') : undefined;
      if (run) {
        handed = toClaimedRun(run);
        this.metrics.handedOff();
      }
    } catch (error) {
      // The statement may have committed before its answer was lost: a run handed to the claim, which
      // is told nothing, would wait for the idle timeout. Give it back (fenced: a no-op otherwise).
      if (claim) void this.reports.release(runs[0].id, 1).catch(() => undefined);
      throw error;
    } finally {
      claim?.settle(handed);
    }
    this.publish(inserted.values());
    // The worker handed the run is on its critical path, the client's answer is not: let the claim answer first.
    if (handed) await nextTurn();
    for (const run of inserted.values()) this.metrics.runsStarted.inc({ workflow: run.workflow });
    this.wakeLocally(inserted.values());
    const duplicates = runs.filter((run) => !inserted.has(run.id));
    const existing =
      duplicates.length > 0
        ? await this.repository.findByIdempotencyKeys(duplicates.map((run) => ({ workflow: run.workflow, idempotencyKey: run.idempotencyKey! })))
        : new Map();
    const pausedExisting = await this.repository.pausedQueues([...existing.values()]);
    return runs.map((run) => {
      const created = inserted.get(run.id);
      if (created) return { run: toRunView(created, undefined, created.paused), created: true };
      const found = existing.get(`${run.workflow}\u0000${run.idempotencyKey}`)!;
      return { run: toRunView(found, undefined, pausedExisting.has(found.queue)), created: false };
    });
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
   * Wakes, as soon as the start committed, this coordinator's long-poll claims of the queues that got a run
   * due now, instead of when the start's NOTIFY comes back through the LISTEN session. That NOTIFY still
   * wakes every coordinator's, this one's again: a claim that finds nothing waits again. (Its outbox has
   * nothing to wake: a start publishes its wake-ups itself.)
   */
  private wakeLocally(started: Iterable<RunEntity>): void {
    const now = Date.now();
    const due = new Map<string, number>();
    for (const run of started) {
      if (run.status === 'queued' && run.dueAt instanceof Date && run.dueAt.getTime() <= now) due.set(run.queue, (due.get(run.queue) ?? 0) + 1);
    }
    for (const [queue, runs] of due) this.listener.wake(RUNS_READY_CHANNEL, queue, runs);
  }

  async get(id: string): Promise<RunView> {
    return this.view(await this.require(id));
  }

  /** A page of the run's transitions, oldest first, after the cursor `after` (a transition's id). */
  async transitions(id: string, { after, limit }: RunTransitionsQuery): Promise<RunTransitions> {
    const rows = await this.repository.findTransitions(id, after ?? '0', limit + 1);
    if (!rows) throw new RunNotFoundError(id);
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    return {
      items: page.map(({ id: _position, ...row }) => ({ ...row, at: row.at.toISOString() })),
      truncated: more,
      nextCursor: more ? page[page.length - 1].id : null,
    };
  }

  async list(query: ListRunsQuery): Promise<RunPage> {
    if (query.idempotencyKey !== undefined && query.workflow === undefined) {
      throw new InvalidRequestError('invalid_idempotencyKey', 'an idempotency key is unique per workflow: search by it with `workflow` too');
    }
    if (query.tag === null) return { runs: [], nextCursor: null }; // one key asked with two values: no run has both
    const runs = await this.repository.list({ ...query, limit: query.limit + 1 });
    const page = runs.slice(0, query.limit);
    const paused = await this.repository.pausedQueues(page);
    return {
      runs: page.map((run) => toRunView(run, undefined, paused.has(run.queue))),
      nextCursor: runs.length > query.limit ? page[page.length - 1].id : null,
    };
  }

  /**
   * Returns the run once it is terminal, or as it is after `waitMs`. Woken by the NOTIFY its final
   * transition sends; the wait is armed before the read so a transition in between is not missed. A
   * finish on this coordinator hands the ended run over, or at least says it ended (ResultWaits).
   */
  async waitForResult(id: string, waitMs: number): Promise<RunView> {
    const deadline = Date.now() + waitMs;
    const handOff = this.resultWaits.arm(id);
    // Set by a notification of this run's end (not by a reconnect's wake-up) or a finish here: its end has
    // committed, so its steps are final and can be read beside the run (the view needs both) instead of after it.
    let ended = false;
    const announcesEnd = (payload: string) => {
      if (payload === id) ended = true;
      return payload === id;
    };
    try {
      for (;;) {
        const left = deadline - Date.now();
        if (left > 0 && !this.listener.isClosed) await handOff.settled(left);
        const handed = handOff.finished;
        if (handed) return toRunView(handed.run, handed.hasSteps ? await this.repository.findTasks(id) : []);
        ended ||= handOff.ended;
        const remaining = deadline - Date.now();
        const wait = remaining > 0 ? this.listener.waitFor(RUN_FINISHED_CHANNEL, announcesEnd, remaining) : undefined;
        const [run, tasks] = await Promise.all([this.require(id), ended ? this.repository.findTasks(id) : undefined]).catch((error: unknown) => {
          wait?.cancel();
          throw error;
        });
        if (!wait || isTerminalStatus(run.status) || this.listener.isClosed) {
          wait?.cancel();
          return tasks && isTerminalStatus(run.status) ? toRunView(run, tasks) : this.view(run);
        }
        await wait.notified;
      }
    } finally {
      handOff.release();
    }
  }

  /** Cancels the run and its unfinished child runs. */
  async cancel(id: string): Promise<RunView> {
    this.check(id, await this.control.cancel(id), (status) => new RunAlreadyTerminalError(id, status));
    this.metrics.runsCancelled.inc();
    return this.get(id);
  }

  async sendEvent(id: string, name: string, data: JsonValue): Promise<EventAccepted> {
    const outcome = await this.control.sendEvent(id, name, data);
    this.check(id, outcome, (status) => new RunAlreadyTerminalError(id, status));
    return { delivered: outcome.delivered };
  }

  /** Ends a durable sleep early. */
  async wake(id: string): Promise<RunView> {
    this.check(id, await this.control.wake(id), (status) => new RunNotSleepingError(id, status));
    return this.get(id);
  }

  /** Runs a failed run again, resuming from its completed steps. */
  async retry(id: string): Promise<RunView> {
    this.check(id, await this.control.retry(id), (status) => new RunNotFailedError(id, status));
    return this.get(id);
  }

  private check(id: string, outcome: ControlOutcome, refusal: (status: string) => Error): void {
    if (!outcome.previous) throw new RunNotFoundError(id);
    if (!outcome.applied) throw refusal(outcome.previous);
  }

  /** The run with its steps, and whether a pause holds it. */
  private async view(run: RunEntity): Promise<RunView> {
    const [tasks, paused] = await Promise.all([this.repository.findTasks(run.id), this.repository.pausedQueues([run])]);
    return toRunView(run, tasks, paused.has(run.queue));
  }

  private async require(id: string): Promise<RunEntity> {
    const run = await this.repository.findById(id);
    if (!run) throw new RunNotFoundError(id);
    return run;
  }
}
