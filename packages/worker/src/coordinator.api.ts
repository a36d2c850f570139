import { API, type EndpointCall, type EndpointResult, parseReportsRequest, REPORTS_MAX, type WorkerReport } from '@nest-durable/common';
import { answeredError, CoordinatorUnavailableError, isAnsweredError, isTransient, OfferNotFoundError } from '@nest-durable/client';
import type {
  ClaimedRun,
  CompleteRunRequest,
  CreateCompletionTokenRequest,
  FailRunRequest,
  RunValuesRequest,
  RecordUpdatesRequest,
  GroupRequest,
  GroupResponse,
  StartChildRequest,
  StepResponse,
  StoredTask,
  StreamDeadLetterReport,
  StreamDeadLetterResponse,
  SuspendRequest,
  TakeRunsResponse,
  TaskResultRequest,
  TraceCarrier,
  WorkerRegistration,
  WorkflowRef,
} from '@nest-durable/common';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay, setImmediate as nextTurn } from 'node:timers/promises';
import { CoordinatorPool } from './coordinator-pool';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';

/** Deadline of one attempt of a request (a claim's: its wait, plus this). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Bytes of JSON per batch: well below the coordinator's default body limit (2 MiB). */
const BATCH_BYTES = 1024 * 1024;
/** Tries of a write that gives up (see report): about three seconds. */
const REPORT_ATTEMPTS = 6;
const REPORT_FIRST_DELAY_MS = 100;
/** The longest wait between two attempts of a write: once the coordinator is back, a held run writes within it. */
const REPORT_MAX_DELAY_MS = 1_000;

interface PendingReport {
  report: WorkerReport;
  bytes: number;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
  /** Why it was refused, once it was. */
  refusal?: unknown;
}

function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}

/** The worker side of the worker protocol (see WorkerApiController in the coordinator). */
@Injectable()
export class CoordinatorApi implements OnApplicationShutdown {
  private readonly logger = new Logger(CoordinatorApi.name);
  private readonly coordinators: CoordinatorPool;
  /** Reports waiting for the one in flight to return (see report batching below). */
  private pending: PendingReport[] = [];
  private sending = false;
  /** Settles once the turn that sends the reports queued by now has sent them (see afterQueuedReports). */
  private queuedSent: Promise<void> = Promise.resolve();
  private readonly closing = new AbortController();

  constructor(@Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions) {
    this.coordinators = new CoordinatorPool(coordinatorUrls(options.coordinatorUrl), options.headers);
  }

  async claim(workflows: WorkflowRef[], limit: number, waitMs: number, signal?: AbortSignal): Promise<ClaimedRun[]> {
    await this.afterQueuedReports();
    const response = await this.coordinators.call(
      API.claimRuns,
      { body: { workerId: this.options.workerId, buildId: this.options.buildId, workflows, limit, waitMs } },
      { signal, timeoutMs: waitMs + REQUEST_TIMEOUT_MS },
    );
    return response.runs;
  }

  /**
   * Offers this worker to the starts of one coordinator for up to `waitMs` (see HandOffOffers): `answer` is
   * the run a start handed it, if any. `withdraw` goes to that same coordinator and makes `answer` come at
   * once, with the run handed before it, if any: an offer is withdrawn, never dropped, so a run handed at
   * that moment is not left running for nobody. It resolves false when the offer did not wait there (it
   * answered already, or a load balancer sent the offer to another coordinator).
   */
  offer(workflows: WorkflowRef[], waitMs: number): { answer: Promise<ClaimedRun[]>; withdraw(): Promise<boolean> } {
    const coordinator = this.coordinators.pinned();
    const offerId = randomUUID();
    // A withdrawal may overtake it: the coordinator answers such an offer at once.
    const answer = this.afterQueuedReports()
      .then(() =>
        coordinator(
          API.offerRuns,
          { body: { offerId, workerId: this.options.workerId, buildId: this.options.buildId, workflows, waitMs } },
          { timeoutMs: waitMs + REQUEST_TIMEOUT_MS },
        ),
      )
      .then((response) => response.runs);
    return {
      answer,
      withdraw: () =>
        coordinator(API.withdrawOffer, { params: { offerId } }, { timeoutMs: REQUEST_TIMEOUT_MS }).then(
          () => true,
          (error: unknown) => {
            if (isAnsweredError(error) && error instanceof OfferNotFoundError) return false;
            throw error;
          },
        ),
    };
  }

  /** Puts this worker in the worker registry (see WorkerRegistrar). */
  async register(registration: WorkerRegistration, signal?: AbortSignal): Promise<void> {
    await this.coordinators.call(
      API.registerWorker,
      { params: { workerId: this.options.workerId }, body: registration },
      { signal, timeoutMs: REQUEST_TIMEOUT_MS },
    );
  }

  /** Resolves when a coordinator answers its liveness check. */
  async ping(): Promise<void> {
    await this.coordinators.call(API.live, {}, { timeoutMs: 2_000 });
  }

  /**
   * Takes runs for wake-ups a transport delivered: up to one per wake-up of each workflow version (and
   * shard). Returns the runs (each with the wake-up it was taken with) and the wake-ups to give back.
   */
  async take(workflows: (WorkflowRef & { wakeups: string[] })[]): Promise<TakeRunsResponse> {
    if (workflows.length === 0) return { runs: [], requeue: [] };
    return this.coordinators.call(
      API.takeRuns,
      { body: { workerId: this.options.workerId, buildId: this.options.buildId, workflows } },
      { timeoutMs: REQUEST_TIMEOUT_MS },
    );
  }

  /** Hands the coordinator a Streams wake-up that was delivered too often (see StreamDeadLetterReport). */
  reportDeadLetter(report: Omit<StreamDeadLetterReport, 'workerId'>): Promise<StreamDeadLetterResponse> {
    return this.report(API.reportDeadLetter, { body: { workerId: this.options.workerId, ...report } }, false);
  }

  async heartbeat(runs: { id: string; expectedRevision: number }[], signal?: AbortSignal): Promise<string[]> {
    const response = await this.coordinators.call(
      API.heartbeat,
      { body: { workerId: this.options.workerId, runs } },
      { signal, timeoutMs: REQUEST_TIMEOUT_MS },
    );
    return response.lost;
  }

  /**
   * Sends a task result. A result the coordinator would refuse (say, an output with a NUL) throws here,
   * before anything is sent, so the handler sees it at its task as it would see the coordinator's refusal.
   */
  recordTask(runId: string, task: TaskResultRequest, trace?: TraceCarrier): Promise<StoredTask> {
    return this.enqueue({ type: 'task', runId, task, ...trace }) as Promise<StoredTask>;
  }

  /** Sends a run's exposed values and progress (see RunValues): checked here like a task result, then batched. */
  recordValues(runId: string, values: RunValuesRequest): Promise<unknown> {
    return this.enqueue({ type: 'values', runId, values });
  }

  /** `trace`: the span the report belongs to (the coordinator records its own span of the report under it). */
  async complete(runId: string, request: CompleteRunRequest, trace?: TraceCarrier): Promise<void> {
    await this.enqueue({ type: 'complete', runId, complete: request, ...trace });
  }

  /** Fails the run; with `retryDelayMs`, schedules its next attempt instead. */
  async fail(runId: string, request: FailRunRequest, trace?: TraceCarrier): Promise<void> {
    await this.enqueue({ type: 'fail', runId, fail: request, ...trace });
  }

  /**
   * A claim or an offer goes out after the reports queued before it, and those made in the same turn: the
   * runtime asks for more work as soon as it starts a run it took, and that run's handler, when it is quick,
   * reports its end in the same turn (see enqueue). The report moves a run on, towards a client waiting for its
   * result; the claim only waits for new work, so it goes second (on the coordinator too). It waits for no
   * answer, and costs one turn when no report is queued.
   */
  private async afterQueuedReports(): Promise<void> {
    await nextTurn();
    await this.queuedSent;
  }

  /**
   * Report batching ("group commit"): reports made in the same turn of the event loop go together,
   * in one request and one transaction (a handler's last task result and the run's outcome, say:
   * see RunSteps.unsettle); reports made while a batch is in flight wait for it and then go
   * together. An idle worker adds one turn of delay (setImmediate); a busy one pays one commit for
   * many runs' writes.
   */
  private enqueue(report: WorkerReport): Promise<unknown> {
    // Checked with the coordinator's own rules, so one bad report (say, an output with a NUL) fails its own
    // run instead of the whole batch. It throws here, before anything is queued: recordTask's caller sees it
    // at once, complete's and fail's (async) as their rejection.
    parseReportsRequest({ reports: [report] });
    return new Promise((resolve, reject) => {
      this.pending.push({ report, bytes: Buffer.byteLength(JSON.stringify(report)), resolve, reject });
      if (!this.sending) {
        this.sending = true;
        this.queuedSent = new Promise((sent) =>
          setImmediate(() => {
            void this.sendPending();
            sent();
          }),
        );
      }
    });
  }

  /** The next batch: at most REPORTS_MAX reports and about BATCH_BYTES of JSON (one report may exceed it alone). */
  private nextBatch() {
    let bytes = 0;
    let count = 0;
    while (count < this.pending.length && count < REPORTS_MAX && (count === 0 || bytes + this.pending[count].bytes <= BATCH_BYTES)) {
      bytes += this.pending[count].bytes;
      count++;
    }
    return this.pending.splice(0, count);
  }

  private async sendPending(): Promise<void> {
    while (this.pending.length > 0) {
      await this.sendBatch(this.nextBatch());
    }
    this.sending = false;
  }

  private async sendBatch(batch: PendingReport[]): Promise<void> {
    try {
      const { outcomes } = await this.report(API.report, { body: { reports: batch.map((entry) => entry.report) } });
      batch.forEach((entry, i) => {
        const outcome = outcomes[i];
        if (outcome.ok) entry.resolve(outcome.result);
        else this.refuse(entry, answeredError(outcome.statusCode, outcome.reason, outcome.message));
      });
    } catch (error) {
      // Refused as a whole (too large for the coordinator's body limit, say): one report at a time, so
      // the refusal reaches only the run whose report caused it.
      if (batch.length > 1 && isAnsweredError(error) && error.statusCode < 500) {
        const refused = new Map<string, unknown>();
        for (const entry of batch) {
          const earlier = refused.get(entry.report.runId);
          if (earlier !== undefined) {
            this.refuse(entry, earlier); // its run's earlier report was refused (see refuse)
            continue;
          }
          await this.sendBatch([entry]);
          if (entry.refusal !== undefined) refused.set(entry.report.runId, entry.refusal);
        }
        return;
      }
      for (const entry of batch) this.refuse(entry, error);
    }
  }

  /**
   * A run's reports depend on the ones before them (its outcome on its last task results): once one is
   * refused or cannot be sent, the run's reports still waiting are refused with it, unsent. (In one
   * batch the coordinator does the same: see ReportsService.)
   */
  private refuse(entry: PendingReport, error: unknown): void {
    entry.refusal = error;
    entry.reject(error);
    const runId = entry.report.runId;
    const [later, others] = partition(this.pending, (pending) => pending.report.runId === runId);
    this.pending = others;
    for (const pending of later) {
      pending.refusal = error;
      pending.reject(error);
    }
  }

  suspend(runId: string, request: SuspendRequest): Promise<StepResponse> {
    return this.report(API.suspendRun, { params: { id: runId }, body: request });
  }

  startChild(runId: string, request: StartChildRequest): Promise<StepResponse> {
    return this.report(API.startChild, { params: { id: runId }, body: request });
  }

  createCompletionToken(runId: string, request: CreateCompletionTokenRequest): Promise<StoredTask> {
    return this.report(API.createCompletionToken, { params: { id: runId }, body: request });
  }

  /** Records the answers to the updates the run applied at a wait (fenced by the run's revision, like every write of a run). */
  async recordUpdates(runId: string, request: RecordUpdatesRequest): Promise<void> {
    await this.report(API.recordUpdates, { params: { id: runId }, body: request });
  }

  waitGroup(runId: string, request: GroupRequest): Promise<GroupResponse> {
    return this.report(API.waitGroup, { params: { id: runId }, body: request });
  }

  async release(runId: string, expectedRevision: number): Promise<void> {
    await this.coordinators.call(API.releaseRun, { params: { id: runId }, body: { expectedRevision } }, { timeoutMs: REQUEST_TIMEOUT_MS });
  }

  /** The worker is shutting down: writes still retrying give up (their runs are taken over once idle). */
  onApplicationShutdown(): void {
    this.closing.abort();
  }

  /**
   * Sends a worker write, retrying while no coordinator can serve it: unreachable, or answering 502, 503
   * (its database unavailable) or 504. A write of a run this worker holds (a task result, an outcome, a
   * suspension, a child) is retried for as long as that lasts, until the worker shuts down: giving it up
   * would give up the run, which would go idle and be taken over, counted as a stall, after an outage of
   * seconds. Others (`holdsRun` false: a dead letter, which stays pending for a later recovery to hand over)
   * give up after REPORT_ATTEMPTS, and so does any write answered 500 (a fault of the coordinator's that
   * sending again may not mend). Retrying is safe: a write that did land makes its retry a 409 (revision
   * moved on) or a replay of the same task key (first result wins), and one that comes after another worker
   * took the run over is refused.
   */
  private async report<E extends (typeof API)[keyof typeof API]>(endpoint: E, call: EndpointCall<E>, holdsRun = true): Promise<EndpointResult<E>> {
    for (let attempt = 1; ; attempt++) {
      try {
        // A hung connection must not hold every run's reports: each attempt has a deadline.
        return await this.coordinators.call(endpoint, call, { timeoutMs: REQUEST_TIMEOUT_MS });
      } catch (error) {
        if (!isTransient(error) || this.closing.signal.aborted) throw error;
        if (!(holdsRun && isUnavailable(error)) && attempt >= REPORT_ATTEMPTS) throw error;
        const delayMs = Math.min(REPORT_FIRST_DELAY_MS * 2 ** (attempt - 1), REPORT_MAX_DELAY_MS);
        if (attempt <= 10 || attempt % 60 === 0) {
          this.logger.warn(`${endpoint.path} failed (${(error as Error).message}); retry ${attempt} in ${delayMs} ms`);
        }
        await delay(delayMs, undefined, { signal: this.closing.signal }).catch(() => undefined);
        if (this.closing.signal.aborted) throw error;
      }
    }
  }
}

/** No coordinator could serve the request: none answered, or the one that did had no database (or no upstream). */
function isUnavailable(error: unknown): boolean {
  return error instanceof CoordinatorUnavailableError || (isAnsweredError(error) && [502, 503, 504].includes(error.statusCode));
}

/** The configured coordinator URL, or several (they share one database, see CoordinatorPool). */
function coordinatorUrls(configured: string | readonly string[]): string[] {
  return typeof configured === 'string' ? [configured] : [...configured];
}
