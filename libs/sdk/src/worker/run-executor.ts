import type { ClaimedRun, ErrorDetails, JsonValue, StoredTask } from '@app/contracts';
import { Injectable, Logger } from '@nestjs/common';
import { isRevisionConflict } from '../http/json-http.client';
import { RunLostError, TaskFailedError, toErrorDetails } from '../workflow/errors';
import type { TaskContext, TaskOptions, WorkflowContext } from '../workflow/workflow';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from './run-lease';
import { WorkflowRegistry } from './workflow.registry';

const TASK_NAME_MAX_LENGTH = 200;

/** Executes one claimed run: replays recorded tasks, runs the rest, and reports the outcome. */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger(RunExecutor.name);

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
  ) {}

  async execute(run: ClaimedRun, lease: RunLease): Promise<void> {
    const workflow = this.registry.get(run.workflow, run.version);
    try {
      if (!workflow) throw new Error(`workflow ${run.workflow} ${run.version} is not registered on this worker`);
      const output = await workflow.handler(this.contextFor(run, lease), run.input);
      lease.throwIfLost();
      await this.api.complete(run.id, { expectedRevision: lease.revision, output: toJson(output) });
    } catch (error) {
      if (error instanceof RunLostError || lease.isLost || isRevisionConflict(error)) {
        lease.lose('the coordinator refused a write (revision conflict)');
        this.logger.warn(`run ${run.id} (${run.workflow} ${run.version}) is no longer ours; stopped without further writes`);
        return;
      }
      await this.failRun(run, lease, error);
    }
  }

  private async failRun(run: ClaimedRun, lease: RunLease, error: unknown): Promise<void> {
    const details: ErrorDetails = error instanceof TaskFailedError ? error.details : toErrorDetails(error);
    try {
      await this.api.fail(run.id, { expectedRevision: lease.revision, error: details });
    } catch (reportError) {
      if (isRevisionConflict(reportError)) {
        lease.lose('revision conflict');
        this.logger.warn(`run ${run.id} is no longer ours; its failure was not recorded`);
        return;
      }
      throw reportError;
    }
  }

  private contextFor(run: ClaimedRun, lease: RunLease): WorkflowContext {
    const recorded = new Map<string, StoredTask>(run.tasks.map((task) => [task.key, task]));
    const calls = new Map<string, number>();
    const task = async <T extends JsonValue | void>(
      name: string,
      fn: (task: TaskContext) => Promise<T> | T,
      options: TaskOptions = {},
    ): Promise<T> => {
      lease.throwIfLost();
      if (typeof name !== 'string' || name.length === 0 || name.length > TASK_NAME_MAX_LENGTH || /[\u0000-\u001f]/.test(name)) {
        throw new Error(`task name must be 1-${TASK_NAME_MAX_LENGTH} characters with no control characters`);
      }
      const occurrence = (calls.get(name) ?? 0) + 1;
      calls.set(name, occurrence);
      const key = `${name}#${occurrence}`;
      const replayed = recorded.get(key);
      if (replayed) return outcomeOf<T>(replayed);

      const attempt = await this.runAttempts(fn, options, lease);
      lease.throwIfLost();
      const stored = await this.api.recordTask(run.id, {
        expectedRevision: lease.revision,
        key,
        name,
        attempts: attempt.attempts,
        ...(attempt.ok
          ? { status: 'completed' as const, output: attempt.output, error: null }
          : { status: 'failed' as const, output: null, error: attempt.error }),
      });
      return outcomeOf<T>(stored);
    };
    return { runId: run.id, workflow: run.workflow, version: run.version, attempt: run.attempt, signal: lease.signal, task };
  }

  private async runAttempts<T>(
    fn: (task: TaskContext) => Promise<T> | T,
    options: TaskOptions,
    lease: RunLease,
  ): Promise<{ ok: true; output: JsonValue; attempts: number } | { ok: false; error: ErrorDetails; attempts: number }> {
    const maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 1);
    for (let attempt = 1; ; attempt++) {
      try {
        const output = await fn({ attempt, signal: lease.signal });
        return { ok: true, output: toJson(output), attempts: attempt };
      } catch (error) {
        lease.throwIfLost();
        if (attempt >= maxAttempts) return { ok: false, error: toErrorDetails(error), attempts: attempt };
        const delayMs = options.retry?.delayMs ?? 0;
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }
}

/** The recorded outcome, as every execution (first or replay) sees it. */
function outcomeOf<T>(task: StoredTask): T {
  if (task.status === 'failed') throw new TaskFailedError(task.key, task.error ?? { name: 'Error', message: 'task failed' });
  return task.output as T;
}

/** Normalises a handler's value to JSON (undefined becomes null, Dates become strings). */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
