import {
  type ClaimedRun,
  type ErrorDetails,
  InvalidRequestError,
  type JsonValue,
  parseIdentifier,
  type StoredTask,
  TASK_DURATION_MS_MAX,
  type WorkflowTarget,
} from '@nest-durable/common';
import { isAnsweredError, isRevisionConflict, isTransient } from '@nest-durable/client';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  isNonRetryable,
  RunLostError,
  RunSuspendedError,
  TaskFailedError,
  TaskTimeoutError,
  toErrorDetails,
  type ChildOptions,
  type EventResult,
  retryDelayMs,
  type TaskContext,
  type TaskOptions,
  type WorkflowContext,
  type RetryPolicy,
  WorkflowNotHostedError,
} from '@nest-durable/workflow';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from '@app/locking';
import { checkChild, checkDelay } from './step-checks';
import { childResultOf, outcomeOf, StepHistory } from './step-history';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';
import { WorkflowRegistry } from './workflow.registry';

/** What a run's handler came to: its output, or what it threw (or the coordinator's refusal of what it came to). */
type HandlerOutcome = { ok: true; output: JsonValue } | { ok: false; error: unknown; refused?: true };

type AttemptOutcome = { ok: true; output: JsonValue; attempts: number } | { ok: false; error: ErrorDetails; attempts: number; nonRetryable: boolean };

/** Executes one claimed run: replays recorded steps, runs the rest, and reports the outcome. */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger(RunExecutor.name);

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
  ) {}

  async execute(run: ClaimedRun, lease: RunLease): Promise<void> {
    const workflow = this.registry.get(run.workflow, run.version);
    let outcome: HandlerOutcome;
    try {
      if (!workflow) throw new WorkflowNotHostedError(run.workflow, run.version);
      const context = new RunContext(run, lease, this.api, this.options);
      const output = await workflow.handler(context, run.input);
      lease.throwIfEnded();
      // A task result refused after the handler went past it (see RunContext.unsettle) fails the run as it would have at the task.
      if (context.refusal !== undefined) throw context.refusal;
      outcome = { ok: true, output: toJson(output) };
    } catch (error) {
      if (lease.isSuspended || error instanceof RunSuspendedError) return;
      if (lease.isLost || error instanceof RunLostError) return this.stopped(run, lease);
      outcome = { ok: false, error };
    }

    // Reporting is apart from the handler: a report that cannot get through (the worker is shutting down
    // while no coordinator answers) must never turn into a failure of the run. The run stays claimed and is
    // taken over once its claim goes idle. One the coordinator refuses is another matter (below).
    for (let refusedBefore = false; ; refusedBefore = true) {
      try {
        await lease.reportOutcome(() => this.reportOutcome(run, lease, workflow?.retry, outcome));
        lease.finish();
        return;
      } catch (reportError) {
        if (isRevisionConflict(reportError)) {
          lease.lose('the coordinator refused a write (revision conflict)');
          return this.stopped(run, lease);
        }
        if (isRefusedAsInvalid(reportError) && !refusedBefore) {
          // The outcome itself was refused (an output over the size limit or nested too deep, an error too
          // large): no resend can land it, and a run left claimed would be taken over and re-run until the
          // stall limit failed it for stalls it never had. The refusal is its error instead, not retried (a
          // replay comes to the same outcome); that error is small: refused again, the run is left.
          outcome = { ok: false, error: reportError, refused: true };
          continue;
        }
        lease.lose(`its outcome could not be reported: ${(reportError as Error).message}`);
        this.logger.error('could not report the outcome of a run; it will be taken over once its claim goes idle', {
          runId: run.id,
          workflow: run.workflow,
          error: (reportError as Error).message,
        });
        return;
      }
    }
  }

  /** Completes the run, or fails it (to be retried when its workflow's policy allows). */
  private reportOutcome(run: ClaimedRun, lease: RunLease, policy: RetryPolicy | undefined, outcome: HandlerOutcome): Promise<unknown> {
    if (outcome.ok) return this.api.complete(run.id, { expectedRevision: lease.revision, output: outcome.output });
    const retry = policy && !outcome.refused && !isNonRetryable(outcome.error) && run.attempt < policy.maxAttempts;
    const details = outcome.error instanceof TaskFailedError ? outcome.error.details : toErrorDetails(outcome.error);
    const error = outcome.refused ? { ...details, nonRetryable: true } : details;
    const retryDelay = retry ? retryDelayMs(policy, run.attempt) : undefined;
    return this.api.fail(run.id, { expectedRevision: lease.revision, error, retryDelayMs: retryDelay });
  }

  private stopped(run: ClaimedRun, lease: RunLease): void {
    this.logger.warn('run is no longer ours; stopped without further writes', {
      runId: run.id,
      workflow: run.workflow,
      version: run.version,
      workerId: this.options.workerId,
      reason: lease.lostReason,
    });
  }
}

/** The `ctx` a handler receives for one execution of a run. */
class RunContext implements WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  readonly attempt: number;
  private readonly history: StepHistory;
  /** The task results sent and not yet known recorded (see `unsettle`). */
  private unsettled: Promise<void> = Promise.resolve();
  private refused: unknown;

  constructor(
    run: ClaimedRun,
    private readonly lease: RunLease,
    private readonly api: CoordinatorApi,
    private readonly options: ResolvedWorkerOptions,
  ) {
    this.runId = run.id;
    this.workflow = run.workflow;
    this.version = run.version;
    this.attempt = run.attempt;
    this.history = new StepHistory(run.tasks);
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  // biome-ignore lint/suspicious/noConfusingVoidType: a task may return nothing (its result is recorded as null)
  async task<T extends JsonValue | void>(name: string, fn: (task: TaskContext) => Promise<T> | T, options: TaskOptions = {}): Promise<T> {
    await this.settled();
    const step = this.begin('task', name);
    if (step.recorded) return outcomeOf<T>(step.recorded);

    const retry = this.history.retryOf(step.key);
    const began = performance.now();
    const done = await this.runAttempts(step.key, step.seq, name, fn, options, retry ? Number(retry.attempts) : 0);
    // Monotonic, so the coordinator can date the start from its own clock (the attempts of this execution).
    const durationMs = Math.min(Math.round(performance.now() - began), TASK_DURATION_MS_MAX);
    this.lease.throwIfEnded();
    const result = done.ok
      ? { status: 'completed' as const, output: done.output, error: null }
      : { status: 'failed' as const, output: null, error: done.error };
    // Throws at once for a result the coordinator would refuse (the handler sees it here, as before).
    const recording = this.api.recordTask(this.runId, {
      expectedRevision: this.lease.revision,
      key: step.key,
      seq: step.seq,
      name,
      durationMs,
      attempts: done.attempts,
      ...result,
    });
    this.unsettle(this.call(() => recording));
    // The handler goes on with the result as a replay will read it back (jsonb's key order), not as made.
    const stored: StoredTask = { key: step.key, kind: 'task', seq: step.seq, attempts: done.attempts, ...result };
    return outcomeOf<T>(
      { ...stored, output: inJsonbOrder(stored.output), error: stored.error && (inJsonbOrder(stored.error) as ErrorDetails) },
      !done.ok && done.nonRetryable,
    );
  }

  /** Why a task result this execution sent was refused, once one was (the run's outcome must not be reported then). */
  get refusal(): unknown {
    return this.refused;
  }

  /**
   * A task's result goes back to the handler while its record is still on its way, so that the record
   * of a handler's last task and the run's outcome travel in one report batch (one request, one
   * commit: see CoordinatorApi). The record is still durable before anything later happens: every
   * step first waits for the records sent before it (`settled`); the outcome goes after them, and is
   * refused with any of them (by CoordinatorApi before it is sent, by the coordinator in one batch).
   * A record that is refused ends the execution at the next step (RunLostError after a 409, see
   * `call`), or, if the handler has returned meanwhile, fails the run as the refusal would have.
   */
  private unsettle(record: Promise<unknown>): void {
    // Settles to nothing: the recorded tasks are not kept for the whole execution.
    this.unsettled = Promise.all([this.unsettled, record]).then(() => undefined);
    // Seen by the next step, or by the outcome's own refusal: not an unhandled rejection meanwhile.
    record.catch((error: unknown) => {
      this.refused ??= error;
    });
    this.unsettled.catch(() => undefined);
  }

  /** Waits until the task results sent so far are recorded (throws RunLostError if one was refused). */
  private async settled(): Promise<void> {
    await this.unsettled;
  }

  async sleep(name: string, durationMs: number): Promise<void> {
    const delayMs = checkDelay(durationMs, 'sleep duration');
    await this.settled();
    const step = this.begin('sleep', name);
    if (step.recorded) return;
    await this.suspendAt(step.key, () =>
      this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, kind: 'sleep', name, delayMs, attempts: 0 }),
    );
  }

  async waitForEvent<T = JsonValue>(name: string, options: { timeoutMs?: number } = {}): Promise<EventResult<T>> {
    parseIdentifier(name, 'event_name');
    const delayMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'event timeout');
    await this.settled();
    const step = this.begin('event', name);
    const resolved =
      step.recorded ??
      (await this.suspendAt(step.key, () =>
        this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, kind: 'event', name, delayMs, attempts: 0 }),
      ));
    return resolved.output as unknown as EventResult<T>;
  }

  async startChild<I>(name: string, workflow: WorkflowTarget, input: I, options: ChildOptions = {}): Promise<string> {
    const step = await this.childStep(name, workflow, input, options, false, null);
    return (step.output as { childId: string }).childId;
  }

  async child<I, O>(name: string, workflow: WorkflowTarget, input: I, options: ChildOptions & { timeoutMs?: number } = {}): Promise<O> {
    const timeoutMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'child timeout');
    return childResultOf<O>(await this.childStep(name, workflow, input, options, true, timeoutMs));
  }

  patched(id: string): boolean {
    this.lease.throwIfEnded();
    const decision = this.history.patch(id);
    if (decision.marker) {
      // Sent as a task result is (see `unsettle`): no round trip of its own, durable before the next step.
      const { key, seq } = decision.marker;
      const recording = this.api.recordTask(this.runId, {
        expectedRevision: this.lease.revision,
        key,
        seq,
        name: id,
        kind: 'patch',
        status: 'completed',
        attempts: 1,
        durationMs: 0,
        output: null,
        error: null,
      });
      this.unsettle(this.call(() => recording));
    }
    return decision.patched;
  }

  deprecatePatch(id: string): void {
    this.lease.throwIfEnded();
    this.history.deprecatePatch(id);
  }

  private async childStep(
    name: string,
    target: WorkflowTarget,
    input: unknown,
    options: ChildOptions,
    wait: boolean,
    timeoutMs: number | null,
  ): Promise<StoredTask> {
    const { shard, tags } = options;
    const workflow = checkChild(target, options);
    await this.settled();
    const step = this.begin('child', name);
    if (step.recorded) return step.recorded;
    return this.suspendAt(step.key, () =>
      this.api.startChild(this.runId, {
        expectedRevision: this.lease.revision,
        key: step.key,
        seq: step.seq,
        name,
        workflow: workflow.name,
        version: workflow.version,
        input: toJson(input),
        wait,
        timeoutMs,
        shard,
        tags,
      }),
    );
  }

  private begin(kind: 'task' | 'sleep' | 'event' | 'child', name: string) {
    this.lease.throwIfEnded();
    return this.history.next(kind, name);
  }

  /**
   * Sends a write under the claim. A 409 means the run is no longer ours, and a coordinator that
   * stays unreachable means we cannot tell: either way this execution stops here (RunLostError, which
   * the handler cannot outlive: every later step throws it too) and writes nothing more.
   */
  private async call<R>(send: () => Promise<R>): Promise<R> {
    try {
      return await send();
    } catch (error) {
      if (isRevisionConflict(error)) this.lease.lose('the coordinator refused a write (revision conflict)');
      else if (isTransient(error)) this.lease.lose(`the coordinator could not be reached: ${(error as Error).message}`);
      else throw error;
      throw new RunLostError(this.runId, this.lease.lostReason!);
    }
  }

  /** Sends a suspending step; if the run did suspend, this execution ends here. */
  private async suspendAt(key: string, send: () => Promise<{ suspended: boolean; task: StoredTask }>): Promise<StoredTask> {
    // A suspension moves the revision on: the task results sent before it must have landed first.
    await this.settled();
    const response = await this.call(() => this.lease.whileEnding(send));
    if (!response.suspended) return response.task;
    this.lease.suspend();
    throw new RunSuspendedError(this.runId, key);
  }

  private async runAttempts<T>(
    key: string,
    seq: number,
    name: string,
    fn: (task: TaskContext) => Promise<T> | T,
    options: TaskOptions,
    attemptsBefore: number,
  ): Promise<AttemptOutcome> {
    const maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 1);
    for (let attempt = attemptsBefore + 1; ; attempt++) {
      try {
        const output = await this.attemptOnce(key, fn, attempt, options.timeoutMs);
        return { ok: true, output: toJson(output), attempts: attempt };
      } catch (error) {
        this.lease.throwIfEnded();
        const nonRetryable = isNonRetryable(error);
        if (nonRetryable || attempt >= maxAttempts || !options.retry) return { ok: false, error: toErrorDetails(error), attempts: attempt, nonRetryable };
        const delayMs = retryDelayMs(options.retry, attempt);
        if (delayMs > this.options.inProcessRetryMaxMs) {
          // A long wait would hold a worker slot: suspend the run and retry when it is due.
          await this.suspendAt(`retry:${key}`, () =>
            this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: `retry:${key}`, seq, kind: 'retry', name, delayMs, attempts: attempt }),
          );
        }
        await abortableDelay(delayMs, this.lease.signal);
      }
    }
  }

  private async attemptOnce<T>(key: string, fn: (task: TaskContext) => Promise<T> | T, attempt: number, timeoutMs?: number): Promise<T> {
    if (timeoutMs === undefined) return fn({ attempt, signal: this.lease.signal });
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([this.lease.signal, timeout]);
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(timeout.aborted ? new TaskTimeoutError(key, timeoutMs) : signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([Promise.resolve().then(() => fn({ attempt, signal })), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `value` with each object's keys in the order PostgreSQL's jsonb keeps them (shorter first, then by
 * their UTF-8 bytes), the order in which a replay reads a recorded result back.
 */
export function inJsonbOrder(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => {
    const [x, y] = [Buffer.from(a), Buffer.from(b)];
    return x.length - y.length || Buffer.compare(x, y);
  });
  return Object.fromEntries(keys.map((key) => [key, inJsonbOrder(value[key])]));
}

/**
 * The coordinator refused the request itself (400, 413), or this worker's own check by the contract did before
 * sending it (an InvalidRequestError, see CoordinatorApi.enqueue): sent again, it would be refused again.
 */
function isRefusedAsInvalid(error: unknown): boolean {
  return isAnsweredError(error) ? error.statusCode === 400 || error.statusCode === 413 : error instanceof InvalidRequestError;
}

/** Normalises a handler's value to JSON (undefined becomes null, Dates become strings). */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
