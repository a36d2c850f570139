import type { JsonValue } from '@app/contracts';

/** How often a task is tried before its failure is recorded. Default: once, no retry. */
export interface RetryPolicy {
  maxAttempts: number;
  /** Wait between attempts, in process. Default 0. */
  delayMs?: number;
}

export interface TaskOptions {
  retry?: RetryPolicy;
}

export interface TaskContext {
  /** 1 on the first try. */
  readonly attempt: number;
  /** Aborted when the run is lost to this worker (taken over, cancelled) or the worker shuts down. */
  readonly signal: AbortSignal;
}

export interface WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  readonly attempt: number;
  readonly signal: AbortSignal;
  /**
   * Runs a checkpointed step. Its result is recorded once; when the run is re-executed (say,
   * after its worker crashed) the recorded result is returned and `fn` does not run again. Tasks
   * are addressed by name and call order: the n-th call of `name` in a run is `name#n`.
   */
  task<T extends JsonValue | void>(name: string, fn: (task: TaskContext) => Promise<T> | T, options?: TaskOptions): Promise<T>;
}

export interface WorkflowDefinition<I = JsonValue, O = JsonValue> {
  readonly name: string;
  readonly version: string;
  readonly handler: (ctx: WorkflowContext, input: I) => Promise<O>;
}

/** Declares a workflow: a name, a version and a handler. Inputs and outputs are JSON. */
export function defineWorkflow<I = JsonValue, O = JsonValue>(definition: WorkflowDefinition<I, O>): WorkflowDefinition<I, O> {
  return Object.freeze({ ...definition });
}

export type InputOf<W> = W extends WorkflowDefinition<infer I, unknown> ? I : never;
export type OutputOf<W> = W extends WorkflowDefinition<never, infer O> ? O : never;
