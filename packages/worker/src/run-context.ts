import {
  type ClaimedRun,
  type ErrorDetails,
  type JsonValue,
  parseIdentifier,
  type StoredTask,
  TASK_DURATION_MS_MAX,
  traceCarrierOf,
  type WorkflowTarget,
} from '@nest-durable/common';
import { isRevisionConflict, isTransient } from '@nest-durable/client';
import {
  isNonRetryable,
  RunLostError,
  RunSuspendedError,
  TaskTimeoutError,
  toErrorDetails,
  type ChildOptions,
  type EventResult,
  retryDelayMs,
  type TaskContext,
  type TaskOptions,
  type WorkflowContext,
} from '@nest-durable/workflow';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from '@app/locking';
import { checkChild, checkDelay } from './step-checks';
import { childResultOf, outcomeOf, StepHistory } from './step-history';
import { type ResolvedWorkerOptions } from './worker.options';
import { inJsonbOrder, toJson } from './json-values';
import { type Context, trace } from '@opentelemetry/api';
import { failed, inStepSpan } from './run-tracing';

type AttemptOutcome = { ok: true; output: JsonValue; attempts: number } | { ok: false; error: ErrorDetails; attempts: number; nonRetryable: boolean };

/** The `ctx` a handler receives for one execution of a run. */
export class RunContext implements WorkflowContext {
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
    /** The context of this execution's run span: the parent of its steps' spans. */
    private readonly traced: Context,
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
    const { done, carrier } = await inStepSpan(this.traced, `task ${name}`, this.stepAttributes('task', name, step.key), async (span) => {
      const done = await this.runAttempts(step.key, step.seq, name, fn, options, retry ? Number(retry.attempts) : 0);
      span.setAttribute('workflow.task.attempts', done.attempts);
      if (!done.ok) failed(span, done.error.message);
      // The task result's report is recorded under the task's span.
      return { done, carrier: traceCarrierOf(span) };
    });
    // Monotonic, so the coordinator can date the start from its own clock (the attempts of this execution).
    const durationMs = Math.min(Math.round(performance.now() - began), TASK_DURATION_MS_MAX);
    this.lease.throwIfEnded();
    const result = done.ok
      ? { status: 'completed' as const, output: done.output, error: null }
      : { status: 'failed' as const, output: null, error: done.error };
    // Throws at once for a result the coordinator would refuse (the handler sees it here, as before).
    const recording = this.api.recordTask(
      this.runId,
      { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, name, durationMs, attempts: done.attempts, ...result },
      carrier,
    );
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
    await this.wait({ kind: 'sleep', name, delayMs }, step, { 'workflow.sleep.delay_ms': delayMs });
  }

  async waitForEvent<T = JsonValue>(name: string, options: { timeoutMs?: number } = {}): Promise<EventResult<T>> {
    parseIdentifier(name, 'event_name');
    const delayMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'event timeout');
    await this.settled();
    const step = this.begin('event', name);
    const resolved = step.recorded ?? (await this.wait({ kind: 'event', name, delayMs }, step));
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
    const attributes = { ...this.stepAttributes('child', name, step.key), 'workflow.child.name': workflow.name, 'workflow.child.version': workflow.version };
    // The child run is started under this span: its spans are in this run's trace.
    return inStepSpan(this.traced, `child ${workflow.name}`, attributes, (span) =>
      this.suspendAt(step.key, () =>
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
          ...traceCarrierOf(span),
        }),
      ),
    );
  }

  /** Suspends the run at a sleep or an event wait (see suspendAt), in the step's span. */
  private wait(
    wait: { kind: 'sleep'; name: string; delayMs: number } | { kind: 'event'; name: string; delayMs: number | null },
    step: { key: string; seq: number },
    attributes: Record<string, number> = {},
  ): Promise<StoredTask> {
    const spanAttributes = { ...this.stepAttributes(wait.kind, wait.name, step.key), ...attributes };
    return inStepSpan(this.traced, `${wait.kind} ${wait.name}`, spanAttributes, (span) =>
      this.suspendAt(step.key, () =>
        this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, attempts: 0, ...wait, ...traceCarrierOf(span) }),
      ),
    );
  }

  private stepAttributes(kind: string, name: string, key: string) {
    return { 'workflow.run_id': this.runId, 'workflow.step.kind': kind, 'workflow.step.name': name, 'workflow.step.key': key };
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
          // Under the task's span, active while its attempts run.
          const carrier = traceCarrierOf(trace.getActiveSpan());
          await this.suspendAt(`retry:${key}`, () =>
            this.api.suspend(this.runId, {
              expectedRevision: this.lease.revision,
              key: `retry:${key}`,
              seq,
              kind: 'retry',
              name,
              delayMs,
              attempts: attempt,
              ...carrier,
            }),
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
