import type { EventMatch, JsonValue, WorkflowTarget } from '@nest-durable/common';
import type { ChildOptions, ExternalResult, TaskContext, TaskOptions, WorkflowDefinition, WorkflowRef } from './workflow';
import type { WorkflowClass } from '@nest-durable/common';

/*
 * The branches of a wait group (`ctx.any`, `ctx.all`): plain descriptions, built with `branch.*`, that the group
 * takes all at once, so that it can wait on them together (a `ctx.waitForEvent` promise would have suspended the
 * run on its own). Each kind says what finishes it. A completion token's `result` (`ctx.awaitExternal`) is a member
 * as it is, not awaited: it describes its wait (`kind: 'external'`), and its value is the completion's data.
 */

/** Waits for an event sent to the run (`POST /v1/runs/:id/events/:name`) whose data has the `match` values; its value is the data. */
export interface EventBranch<T = JsonValue> {
  readonly kind: 'event';
  readonly name: string;
  readonly match?: EventMatch;
  /** The value's type, for inference only. */
  readonly __value?: T;
}

/** Finishes `durationMs` after the group started waiting; its value is null. */
export interface SleepBranch {
  readonly kind: 'sleep';
  readonly durationMs: number;
  readonly __value?: null;
}

/** A checkpointed task run by the worker when the group starts; its value is the task's result (its failure is thrown). */
export interface TaskBranch<T = JsonValue> {
  readonly kind: 'task';
  readonly fn: (task: TaskContext) => Promise<T> | T;
  readonly options?: TaskOptions;
  readonly __value?: T;
}

/** A child run started when the group starts waiting; its value is the child's output (its failure is thrown). */
export interface ChildBranch<T = unknown> {
  readonly kind: 'child';
  readonly workflow: WorkflowTarget;
  readonly input: unknown;
  readonly options?: ChildOptions;
  readonly __value?: T;
}

export type Branch = EventBranch<unknown> | SleepBranch | TaskBranch<unknown> | ChildBranch<unknown> | ExternalResult<unknown>;

/** What a branch finishes with (a completion token's: its data; its failure or timeout is thrown). */
export type BranchValue<B> = B extends ExternalResult<infer T> ? T : B extends { readonly __value?: infer T } ? T : never;

/** What `ctx.any` resolves with: which branch finished first (its position in the list) and its value. */
export type AnyResult<B extends readonly Branch[]> = {
  [K in keyof B]: { index: K extends `${infer N extends number}` ? N : number; value: BranchValue<B[K]> };
}[number];

/** What `ctx.all` resolves with: every branch's value, in the list's order. */
export type AllResult<B extends readonly Branch[]> = { -readonly [K in keyof B]: BranchValue<B[K]> };

/** Builds the branches of `ctx.any` and `ctx.all`. */
export const branch = {
  /** An event of this name; with `match`, only one whose data has these values at these dotted paths (`{ 'customer.id': 'c-1' }`). */
  event<T = JsonValue>(name: string, options: { match?: EventMatch } = {}): EventBranch<T> {
    return { kind: 'event', name, ...(options.match === undefined ? {} : { match: options.match }) };
  },
  /** A durable timer of `durationMs`, counted from when the group starts waiting. */
  sleep(durationMs: number): SleepBranch {
    return { kind: 'sleep', durationMs };
  },
  /** A task (as `ctx.task`), run to its end when the group starts. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a task may return nothing (its result is recorded as null)
  task<T extends JsonValue | void>(fn: (task: TaskContext) => Promise<T> | T, options?: TaskOptions): TaskBranch<T> {
    return { kind: 'task', fn, ...(options === undefined ? {} : { options }) };
  },
  /** A child run (as `ctx.child`), started when the group starts waiting. */
  child<I, O>(workflow: WorkflowDefinition<I, O> | WorkflowClass<I, O> | WorkflowRef, input: I, options?: ChildOptions): ChildBranch<O> {
    return { kind: 'child', workflow, input, ...(options === undefined ? {} : { options }) };
  },
};
