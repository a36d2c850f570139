import { type ClaimedRun, type ErrorDetails, type JsonValue, MAX_DELAY_MS, parseIdentifier, type StoredTask } from '@app/contracts';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { isRevisionConflict } from '../http/json-http.client';
import {
  ChildRunFailedError,
  ChildRunTimeoutError,
  NonDeterminismError,
  RunLostError,
  RunSuspendedError,
  TaskFailedError,
  TaskTimeoutError,
  toErrorDetails,
} from '../workflow/errors';
import {
  type EventResult,
  retryDelayMs,
  type TaskContext,
  type TaskOptions,
  type WorkflowContext,
  type WorkflowRef,
} from '../workflow/workflow';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from './run-lease';
import { StepHistory } from './step-history';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.constants';
import { WorkflowRegistry } from './workflow.registry';

const STEP_NAME_MAX_LENGTH = 200;

type AttemptOutcome = { ok: true; output: JsonValue; attempts: number } | { ok: false; error: ErrorDetails; attempts: number };

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
    try {
      if (!workflow) throw new Error(`workflow ${run.workflow} ${run.version} is not registered on this worker`);
      const output = await workflow.handler(new RunContext(run, lease, this.api, this.options), run.input);
      lease.throwIfEnded();
      await this.api.complete(run.id, { expectedRevision: lease.revision, output: toJson(output) });
    } catch (error) {
      if (lease.isSuspended || error instanceof RunSuspendedError) return;
      if (error instanceof RunLostError || lease.isLost || isRevisionConflict(error)) {
        lease.lose('the coordinator refused a write (revision conflict)');
        this.logger.warn(`run ${run.id} (${run.workflow} ${run.version}) is no longer ours; stopped without further writes`);
        return;
      }
      const policy = workflow?.retry;
      const retry = policy && !(error instanceof NonDeterminismError) && run.attempt < policy.maxAttempts;
      await this.failRun(run, lease, error, retry ? retryDelayMs(policy, run.attempt) : undefined);
    }
  }

  private async failRun(run: ClaimedRun, lease: RunLease, error: unknown, retryInMs: number | undefined): Promise<void> {
    const details: ErrorDetails = error instanceof TaskFailedError ? error.details : toErrorDetails(error);
    try {
      await this.api.fail(run.id, { expectedRevision: lease.revision, error: details, retryDelayMs: retryInMs });
    } catch (reportError) {
      if (isRevisionConflict(reportError)) {
        lease.lose('revision conflict');
        this.logger.warn(`run ${run.id} is no longer ours; its failure was not recorded`);
        return;
      }
      throw reportError;
    }
  }
}

/** The `ctx` a handler receives for one execution of a run. */
class RunContext implements WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  readonly attempt: number;
  private readonly history: StepHistory;

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

  async task<T extends JsonValue | void>(name: string, fn: (task: TaskContext) => Promise<T> | T, options: TaskOptions = {}): Promise<T> {
    const step = this.begin('task', name);
    if (step.recorded) return outcomeOf<T>(step.recorded);

    const retry = this.history.retryOf(step.key);
    const done = await this.runAttempts(step.key, step.seq, name, fn, options, retry ? Number(retry.attempts) : 0);
    this.lease.throwIfEnded();
    const stored = await this.api.recordTask(this.runId, {
      expectedRevision: this.lease.revision,
      key: step.key,
      seq: step.seq,
      name,
      attempts: done.attempts,
      ...(done.ok ? { status: 'completed' as const, output: done.output, error: null } : { status: 'failed' as const, output: null, error: done.error }),
    });
    return outcomeOf<T>(stored);
  }

  async sleep(name: string, durationMs: number): Promise<void> {
    const delayMs = checkDelay(durationMs, 'sleep duration');
    const step = this.begin('sleep', name);
    if (step.recorded) return;
    await this.suspendAt(step.key, () =>
      this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, kind: 'sleep', name, delayMs, attempts: 0 }),
    );
  }

  async waitForEvent<T = JsonValue>(name: string, options: { timeoutMs?: number } = {}): Promise<EventResult<T>> {
    parseIdentifier(name, 'event_name');
    const delayMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'event timeout');
    const step = this.begin('event', name);
    const resolved =
      step.recorded ??
      (await this.suspendAt(step.key, () =>
        this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, kind: 'event', name, delayMs, attempts: 0 }),
      ));
    return resolved.output as unknown as EventResult<T>;
  }

  async startChild<I>(name: string, workflow: WorkflowRef, input: I): Promise<string> {
    const step = await this.childStep(name, workflow, input, false, null);
    return (step.output as { childId: string }).childId;
  }

  async child<I, O>(name: string, workflow: WorkflowRef, input: I, options: { timeoutMs?: number } = {}): Promise<O> {
    const timeoutMs = options.timeoutMs === undefined ? null : checkDelay(options.timeoutMs, 'child timeout');
    const step = await this.childStep(name, workflow, input, true, timeoutMs);
    const outcome = step.output as { timedOut: boolean; childId: string; status: string; output: O; error: ErrorDetails | null };
    if (outcome.timedOut) throw new ChildRunTimeoutError(step.key);
    if (outcome.status !== 'completed') throw new ChildRunFailedError(outcome.childId, outcome.status, outcome.error);
    return outcome.output;
  }

  private async childStep(name: string, workflow: WorkflowRef, input: unknown, wait: boolean, timeoutMs: number | null): Promise<StoredTask> {
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
      }),
    );
  }

  private begin(kind: 'task' | 'sleep' | 'event' | 'child', name: string) {
    this.lease.throwIfEnded();
    if (typeof name !== 'string' || name.length === 0 || name.length > STEP_NAME_MAX_LENGTH || /[\u0000-\u001f:#]/.test(name)) {
      throw new Error(`step name must be 1-${STEP_NAME_MAX_LENGTH} characters, without control characters, ':' or '#'`);
    }
    return this.history.next(kind, name);
  }

  /** Sends a suspending step; if the run did suspend, this execution ends here. */
  private async suspendAt(key: string, send: () => Promise<{ suspended: boolean; task: StoredTask }>): Promise<StoredTask> {
    const response = await send();
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
        if (attempt >= maxAttempts || !options.retry) return { ok: false, error: toErrorDetails(error), attempts: attempt };
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

/** The recorded outcome, as every execution (first or replay) sees it. */
function outcomeOf<T>(task: StoredTask): T {
  if (task.status === 'failed') throw new TaskFailedError(task.key, task.error ?? { name: 'Error', message: 'task failed' });
  return task.output as T;
}

function checkDelay(ms: number, what: string): number {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_DELAY_MS) throw new Error(`${what} must be an integer from 0 to ${MAX_DELAY_MS} ms`);
  return ms;
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

/** Normalises a handler's value to JSON (undefined becomes null, Dates become strings). */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
