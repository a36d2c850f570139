import { checkExposedValue, checkProgress, type EventMatch, type JsonValue, parseIdentifier, type StoredTask, type WorkflowTarget } from '@nest-durable/common';
import {
  type AllResult,
  type AnyResult,
  type AwaitExternalOptions,
  type Branch,
  type ChildOptions,
  type EventResult,
  type ExternalCompletion,
  NonDeterminismError,
  type TaskContext,
  type TaskOptions,
  type WorkflowContext,
  WorkflowError,
} from '@nest-durable/workflow';
import { externalResultOf, LazyResult, waitKeyOf } from '../external-completion';
import { checkChild, checkDelay, checkTimeout } from '../step-checks';
import { childResultOf, outcomeOf, StepHistory } from '../step-history';
import { UpdateHandlers } from '../update-handlers';
import { checkBranches, checkMatch, groupResultOf } from '../wait-groups';

/** Thrown into a replayed handler where its run's recorded history ends: the run got no further than this. */
export class HistoryEndedSignal extends WorkflowError {
  override name = 'HistoryEndedSignal';

  constructor(readonly runId: string) {
    // As RunSuspendedError in a run: the handler stops here; do not catch it (or rethrow it).
    super(`the recorded history of run ${runId} ends here`, { reason: 'replay_history_ended' });
  }
}

/** The run a history records, as a replay needs it. */
export interface ReplayedRun {
  id: string;
  workflow: string;
  version: string;
  attempt: number;
}

/** Settled already: a step waits for it as a run's steps wait for the records before them (RunSteps.settled). */
const SETTLED = Promise.resolve();

/**
 * The `ctx` of a replay: each step answers what the run's history recorded for it, checked by the same StepHistory a
 * run's execution uses, and nothing runs or is written (a task's function is never called). Where the history ends (a
 * step it does not hold, or one still waiting: the run suspended there) the replay stops: that step and every later
 * one throw HistoryEndedSignal, which the handler cannot outlive. A divergence stops it too, with its
 * NonDeterminismError, thrown again by every later step even if the handler caught it.
 */
export class ReplayContext implements WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  readonly attempt: number;
  private readonly history: StepHistory;
  private readonly updates: UpdateHandlers;
  private readonly controller = new AbortController();
  private stopped?: HistoryEndedSignal | NonDeterminismError;

  constructor(run: ReplayedRun, steps: readonly StoredTask[], declaredUpdates: ReadonlySet<string> = new Set()) {
    this.runId = run.id;
    this.workflow = run.workflow;
    this.version = run.version;
    this.attempt = run.attempt;
    this.history = new StepHistory(steps);
    this.updates = new UpdateHandlers(declaredUpdates);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the replay stopped before the handler's end: its history ended, or the code diverged from it. */
  get stop(): HistoryEndedSignal | NonDeterminismError | undefined {
    return this.stopped;
  }

  /** Once the handler has ended of itself: the history must hold nothing it did not reach (throws the divergence). */
  checkEnd(): void {
    this.guard(() => this.history.checkEnd());
  }

  // biome-ignore lint/suspicious/noConfusingVoidType: a task may return nothing (its result is recorded as null)
  async task<T extends JsonValue | void>(name: string, _fn: (task: TaskContext) => Promise<T> | T, _options?: TaskOptions): Promise<T> {
    return outcomeOf<T>(await this.step('task', name));
  }

  async sleep(name: string, durationMs: number): Promise<void> {
    checkDelay(durationMs, 'sleep duration');
    await this.step('sleep', name);
  }

  async waitForEvent<T = JsonValue>(name: string, options: { timeoutMs?: number; match?: EventMatch } = {}): Promise<EventResult<T>> {
    parseIdentifier(name, 'event_name');
    if (options.timeoutMs !== undefined) checkDelay(options.timeoutMs, 'event timeout');
    checkMatch(options.match);
    return (await this.step('event', name)).output as unknown as EventResult<T>;
  }

  async awaitExternal<T = JsonValue>({ name = 'external', timeoutMs }: AwaitExternalOptions = {}): Promise<ExternalCompletion<T>> {
    if (timeoutMs !== undefined) checkTimeout(timeoutMs, 'completion timeout');
    const tokenStep = await this.step('token', name);
    const waitKey = waitKeyOf(tokenStep.key);
    return {
      token: (tokenStep.output as { token: string }).token,
      result: new LazyResult(name, waitKey, async () => externalResultOf<T>(await this.step('external', name, waitKey))),
    };
  }

  async any<const B extends readonly Branch[]>(name: string, branches: B): Promise<AnyResult<B>> {
    return (await this.group('any', name, branches)) as AnyResult<B>;
  }

  async all<const B extends readonly Branch[]>(name: string, branches: B): Promise<AllResult<B>> {
    return (await this.group('all', name, branches)) as AllResult<B>;
  }

  private async group(mode: 'any' | 'all', name: string, branches: readonly Branch[]): Promise<unknown> {
    checkBranches(branches);
    const group = await this.step('group', name);
    return this.guard(() => groupResultOf(mode, group, branches, (index) => this.history.branch(group.key, index)));
  }

  async startChild<I>(name: string, workflow: WorkflowTarget, _input: I, options: ChildOptions = {}): Promise<string> {
    checkChild(workflow, options);
    return ((await this.step('child', name)).output as { childId: string }).childId;
  }

  async child<I, O>(name: string, workflow: WorkflowTarget, _input: I, options: ChildOptions & { timeoutMs?: number } = {}): Promise<O> {
    if (options.timeoutMs !== undefined) checkDelay(options.timeoutMs, 'child timeout');
    checkChild(workflow, options);
    return childResultOf<O>(await this.step('child', name));
  }

  /** Exposed values, query handlers and progress are not part of a run's history: a replay checks them and records nothing. */
  expose(name: string, value: JsonValue): void {
    parseIdentifier(name, 'value_name');
    checkExposedValue(name, value);
  }

  onQuery(name: string, _handler: () => JsonValue): void {
    parseIdentifier(name, 'value_name');
  }

  progress(value: JsonValue): void {
    checkProgress(value);
  }

  handleUpdate<I = JsonValue, O = JsonValue>(name: string, handler: (input: I) => O | Promise<O>): void {
    this.updates.register(name, handler as (input: JsonValue) => unknown);
  }

  patched(id: string): boolean {
    this.throwIfStopped();
    this.updates.checkNoStep();
    // A marker to record means new ground: the step after it finds the history ended.
    return this.guard(() => this.history.patch(id)).patched;
  }

  deprecatePatch(id: string): void {
    this.throwIfStopped();
    this.guard(() => this.history.deprecatePatch(id));
  }

  private async step(kind: 'task' | 'sleep' | 'event' | 'child' | 'group' | 'token' | 'external', name: string, key?: string): Promise<StoredTask> {
    await SETTLED;
    this.throwIfStopped();
    this.updates.checkNoStep();
    const { recorded, seq } = this.guard(() => this.history.next(kind, name, key));
    if (!recorded || recorded.status === 'waiting') throw this.stopWith(new HistoryEndedSignal(this.runId));
    // The updates applied while the run waited here, as its execution applies them again (RunSteps.waited).
    if (kind !== 'task') await this.updates.replay(this.history.updatesAt(seq));
    return recorded;
  }

  private guard<R>(check: () => R): R {
    try {
      return check();
    } catch (error) {
      throw error instanceof NonDeterminismError ? this.stopWith(error) : error;
    }
  }

  private stopWith<E extends HistoryEndedSignal | NonDeterminismError>(reason: E): E {
    this.stopped ??= reason;
    this.controller.abort(this.stopped);
    return reason;
  }

  private throwIfStopped(): void {
    if (this.stopped) throw this.stopped;
  }
}
