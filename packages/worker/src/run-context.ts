import {
  type ClaimedRun,
  type ErrorDetails,
  type EventMatch,
  type JsonValue,
  parseIdentifier,
  type StoredTask,
  traceCarrierOf,
  type WorkflowTarget,
} from '@nest-durable/common';
import {
  type AllResult,
  type AnyResult,
  type AwaitExternalOptions,
  type Branch,
  type ChildOptions,
  type EventResult,
  type ExternalCompletion,
  type TaskContext,
  type TaskOptions,
  type WorkflowContext,
} from '@nest-durable/workflow';
import { Logger } from '@nestjs/common';
import { AttemptClock } from './attempt-clock';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from '@app/locking';
import { checkChild, checkDelay, checkTimeout } from './step-checks';
import { externalResultOf, LazyResult, waitKeyOf } from './external-completion';
import { childResultOf, outcomeOf, StepHistory } from './step-history';
import { type ResolvedWorkerOptions } from './worker.options';
import { UpdateHandlers } from './update-handlers';
import { inJsonbOrder, toJson } from './json-values';
import { RunValues } from './run-values';
import { checkMatch } from './wait-groups';
import { type Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { failed, inStepSpan } from './run-tracing';
import { RunSteps } from './run-steps';
import { TaskAttempts } from './task-attempts';
import { WaitGroupSteps } from './wait-group-steps';

const logger = new Logger('RunContext');

/** The `ctx` a handler receives for one execution of a run. */
export class RunContext implements WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  readonly attempt: number;
  private readonly history: StepHistory;
  private readonly updates: UpdateHandlers;
  private readonly values: RunValues;
  private readonly steps: RunSteps;
  private readonly attempts: TaskAttempts;
  private readonly groups: WaitGroupSteps;

  constructor(
    run: ClaimedRun,
    private readonly lease: RunLease,
    private readonly api: CoordinatorApi,
    options: ResolvedWorkerOptions,
    declaredUpdates: ReadonlySet<string> = new Set(),
    /** The context of this execution's run span: the parent of its steps' spans. */
    private readonly traced: Context = ROOT_CONTEXT,
  ) {
    this.runId = run.id;
    this.workflow = run.workflow;
    this.version = run.version;
    this.attempt = run.attempt;
    this.history = new StepHistory(run.tasks);
    this.values = new RunValues({
      progressIntervalMs: options.progressIntervalMs,
      replaying: () => this.history.replaying,
      send: (update) => this.steps.sendValues(update),
      handlerFailed: (name, error) => logger.warn(`query handler ${name} of run ${this.runId} failed (its last answer stays): ${(error as Error).message}`),
    });
    this.updates = new UpdateHandlers(declaredUpdates);
    this.steps = new RunSteps(this.runId, lease, api, this.history, this.updates, this.values, traced);
    this.attempts = new TaskAttempts(lease, options, (wait) => this.steps.suspendForRetry(wait));
    this.groups = new WaitGroupSteps(this.runId, lease, api, this.history, this.steps, this.attempts, traced);
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  // biome-ignore lint/suspicious/noConfusingVoidType: a task may return nothing (its result is recorded as null)
  async task<T extends JsonValue | void>(name: string, fn: (task: TaskContext) => Promise<T> | T, options: TaskOptions = {}): Promise<T> {
    await this.steps.settled();
    const step = this.steps.begin('task', name);
    if (step.recorded) return outcomeOf<T>(step.recorded);

    const retry = this.history.retryOf(step.key);
    const clock = new AttemptClock();
    const { done, carrier } = await inStepSpan(this.traced, `task ${name}`, this.steps.stepAttributes('task', name, step.key), async (span) => {
      const done = await this.attempts.run(step.key, step.seq, name, fn, options, retry ? Number(retry.attempts) : 0, clock);
      span.setAttribute('workflow.task.attempts', done.attempts);
      if (!done.ok) failed(span, done.error.message);
      // The task result's report is recorded under the task's span.
      return { done, carrier: traceCarrierOf(span) };
    });
    // Monotonic, so the coordinator can date the start from its own clock (the attempts of this execution).
    const durationMs = clock.elapsedMs();
    const attemptTimes = clock.attemptTimes();
    this.lease.throwIfEnded();
    const result = done.ok
      ? { status: 'completed' as const, output: done.output, error: null }
      : { status: 'failed' as const, output: null, error: done.error };
    // Throws at once for a result the coordinator would refuse (the handler sees it here, as before).
    const recording = this.api.recordTask(
      this.runId,
      {
        expectedRevision: this.lease.revision,
        key: step.key,
        seq: step.seq,
        name,
        durationMs,
        ...(attemptTimes && { attemptTimes }),
        attempts: done.attempts,
        ...result,
      },
      carrier,
    );
    this.steps.unsettle(this.steps.call(() => recording));
    // The handler goes on with the result as a replay will read it back (jsonb's key order), not as made.
    const stored: StoredTask = { key: step.key, kind: 'task', seq: step.seq, attempts: done.attempts, ...result };
    return outcomeOf<T>(
      { ...stored, output: inJsonbOrder(stored.output), error: stored.error && (inJsonbOrder(stored.error) as ErrorDetails) },
      !done.ok && done.nonRetryable,
    );
  }

  /** Why a task result this execution sent was refused, once one was (the run's outcome must not be reported then). */
  get refusal(): unknown {
    return this.steps.refusal;
  }

  expose(name: string, value: JsonValue): void {
    this.lease.throwIfEnded();
    this.values.expose(name, value);
  }

  onQuery(name: string, handler: () => JsonValue): void {
    this.values.onQuery(name, handler);
  }

  progress(value: JsonValue): void {
    this.lease.throwIfEnded();
    this.values.report(value);
  }

  /**
   * Before the run suspends or reports its outcome (`send`): every value that changed and the last progress go out
   * now, in the batch before (or with) that write. `end` when this execution is done with the run: no progress
   * timer is left behind (a suspended or lost run sends nothing more).
   */
  flushValues(send = true, end = false): void {
    if (send) this.values.flush(true);
    if (end) this.values.close();
  }

  async sleep(name: string, durationMs: number): Promise<void> {
    const delayMs = checkDelay(durationMs, 'sleep duration');
    await this.steps.settled();
    const step = this.steps.begin('sleep', name);
    if (step.recorded) {
      await this.steps.waited(step);
      return;
    }
    await this.steps.wait({ kind: 'sleep', name, delayMs }, step, { 'workflow.sleep.delay_ms': delayMs });
  }

  async waitForEvent<T = JsonValue>(name: string, options: { timeoutMs?: number; match?: EventMatch } = {}): Promise<EventResult<T>> {
    parseIdentifier(name, 'event_name');
    const delayMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'event timeout');
    checkMatch(options.match);
    const match = options.match === undefined ? {} : { match: options.match };
    await this.steps.settled();
    const step = this.steps.begin('event', name);
    const resolved = step.recorded ? await this.steps.waited(step) : await this.steps.wait({ kind: 'event', name, delayMs, ...match }, step);
    return resolved.output as unknown as EventResult<T>;
  }

  async awaitExternal<T = JsonValue>({ name = 'external', timeoutMs }: AwaitExternalOptions = {}): Promise<ExternalCompletion<T>> {
    const timeout = timeoutMs === undefined ? null : checkTimeout(timeoutMs, 'completion timeout');
    await this.steps.settled();
    const step = this.steps.begin('token', name);
    // The coordinator makes the token; it is recorded before the workflow sees it (a replay reads it back).
    const recorded =
      step.recorded ??
      (await inStepSpan(this.traced, `token ${name}`, this.steps.stepAttributes('token', name, step.key), (span) =>
        this.steps.call(() =>
          this.api.createCompletionToken(this.runId, {
            expectedRevision: this.lease.revision,
            key: step.key,
            seq: step.seq,
            name,
            timeoutMs: timeout,
            ...traceCarrierOf(span),
          }),
        ),
      ));
    const { token } = recorded.output as { token: string };
    const waitKey = waitKeyOf(step.key);
    return {
      token,
      result: new LazyResult(name, waitKey, async () => {
        await this.steps.settled();
        const wait = this.steps.begin('external', name, waitKey);
        // A wait like the others: updates sent meanwhile are applied here (see RunSteps.suspendAt).
        const resolved = wait.recorded ? await this.steps.waited(wait) : await this.steps.wait({ kind: 'external', name }, wait);
        return externalResultOf<T>(resolved);
      }),
    };
  }

  any<const B extends readonly Branch[]>(name: string, branches: B): Promise<AnyResult<B>> {
    return this.groups.take('any', name, branches) as Promise<AnyResult<B>>;
  }

  all<const B extends readonly Branch[]>(name: string, branches: B): Promise<AllResult<B>> {
    return this.groups.take('all', name, branches) as Promise<AllResult<B>>;
  }

  async startChild<I>(name: string, workflow: WorkflowTarget, input: I, options: ChildOptions = {}): Promise<string> {
    const step = await this.childStep(name, workflow, input, options, false, null);
    return (step.output as { childId: string }).childId;
  }

  async child<I, O>(name: string, workflow: WorkflowTarget, input: I, options: ChildOptions & { timeoutMs?: number } = {}): Promise<O> {
    const timeoutMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'child timeout');
    return childResultOf<O>(await this.childStep(name, workflow, input, options, true, timeoutMs));
  }

  handleUpdate<I = JsonValue, O = JsonValue>(name: string, handler: (input: I) => O | Promise<O>): void {
    this.updates.register(name, handler as (input: JsonValue) => unknown);
  }

  patched(id: string): boolean {
    this.lease.throwIfEnded();
    this.updates.checkNoStep();
    const decision = this.history.patch(id);
    if (decision.marker) {
      // Sent as a task result is (see RunSteps.unsettle): no round trip of its own, durable before the next step.
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
      this.steps.unsettle(this.steps.call(() => recording));
    }
    return decision.patched;
  }

  deprecatePatch(id: string): void {
    this.lease.throwIfEnded();
    this.updates.checkNoStep();
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
    await this.steps.settled();
    const step = this.steps.begin('child', name);
    if (step.recorded) return this.steps.waited(step);
    const attributes = {
      ...this.steps.stepAttributes('child', name, step.key),
      'workflow.child.name': workflow.name,
      'workflow.child.version': workflow.version,
    };
    // The child run is started under this span: its spans are in this run's trace.
    const started = await inStepSpan(this.traced, `child ${workflow.name}`, attributes, (span) =>
      this.steps.suspendAt(
        step.key,
        () =>
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
        step.seq,
      ),
    );
    return started.task;
  }
}
