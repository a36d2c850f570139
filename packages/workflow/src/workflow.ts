import type { AllResult, AnyResult, Branch } from './branches';
import type { EventMatch, InputOfSchema, JsonValue, ScheduleCatchUp, ScheduleOverlap, TypedInputSchema, WorkflowClass } from '@nest-durable/common';
import { checkDeclaredSchedules, compileInputCheck, DECLARED_UPDATES_MAX, InvalidRequestError, parseIdentifier, readInputSchema } from '@nest-durable/common';

/**
 * How often a task (or a whole run) is tried. Waits grow exponentially by default, each drawn at
 * random between 0 and the cap ("full jitter") so retries of many runs do not synchronise.
 */
export interface RetryPolicy {
  /** Total tries, the first included. 1 = no retry. */
  maxAttempts: number;
  /** 'exponential' (default): delayMs * 2^(attempt-1), capped at maxDelayMs; 'fixed': delayMs every time. */
  backoff?: 'fixed' | 'exponential';
  /** Base wait. Default 100 ms. */
  delayMs?: number;
  /** Cap of an exponential wait. Default 60 s. */
  maxDelayMs?: number;
  /** Draw each wait at random in [0, wait] (default true for exponential, false for fixed). */
  jitter?: boolean;
}

export interface TaskOptions {
  retry?: RetryPolicy;
  /** Each attempt's time limit: its signal aborts and the attempt fails with TaskTimeoutError. */
  timeoutMs?: number;
}

export interface TaskContext {
  /** 1 on the first try. */
  readonly attempt: number;
  /** Aborts on the attempt's timeout, and when the run is lost to this worker (taken over, cancelled, shutdown). */
  readonly signal: AbortSignal;
}

export type EventResult<T = JsonValue> = { timedOut: false; data: T } | { timedOut: true };

/** Where and how long `ctx.awaitExternal` waits. */
export interface AwaitExternalOptions {
  /** Names the step in the run's history (default `external`): 1-200 characters, no ':' or '#'. */
  name?: string;
  /** The token expires this long after it was made: its wait then throws CompletionTimeoutError (default: never). */
  timeoutMs?: number;
}

/**
 * A completion token and the outcome the workflow will wait for (`ctx.awaitExternal`). `result` is lazy: the run
 * suspends only when it is awaited, so the workflow can hand the token out first (from a task).
 */
export interface ExternalCompletion<T = JsonValue> {
  /** Unguessable (256 random bits), single use: `POST /v1/completions/{token}` completes or fails the step. */
  readonly token: string;
  /**
   * The data the outside system completed the step with. Awaiting it suspends the run until then (an outcome that
   * came earlier is kept for it); throws CompletionFailedError when it failed the step, CompletionTimeoutError
   * when the token expired first.
   */
  readonly result: ExternalResult<T>;
}

/**
 * The lazy outcome of a completion token: the wait starts at its first `await` (`then`), once. It also says which
 * step it waits at, so that a wait over several steps can take it as one of them without awaiting it.
 */
export interface ExternalResult<T = JsonValue> extends PromiseLike<T> {
  readonly kind: 'external';
  /** The step's name, its token's. */
  readonly name: string;
  /** The wait's step key, `external:<name>#<n>`: its token's name and occurrence (`token:<name>#<n>`). */
  readonly key: string;
}

/** A workflow to start as a child: a definition or just its name and version (a `@Workflow` class is one too). */
export interface WorkflowRef {
  readonly name: string;
  readonly version: string;
}

export interface ChildOptions {
  /**
   * Routing shard of the child run: only workers serving it take the child. Default: the parent's
   * shard (so a tree of runs stays where its root was routed); null: no shard.
   */
  shard?: string | null;
  /** Tags of the child run (see `tags` of a start). Default: the parent's. */
  tags?: Record<string, string>;
}

export interface WorkflowContext {
  readonly runId: string;
  readonly workflow: string;
  readonly version: string;
  /** 1 on the first attempt of the run; grows with workflow-level retries. */
  readonly attempt: number;
  readonly signal: AbortSignal;
  /**
   * Runs a checkpointed step. Its result is recorded once; when the run is re-executed (say,
   * after its worker crashed) the recorded result is returned and `fn` does not run again.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a task may return nothing (its result is recorded as null)
  task<T extends JsonValue | void>(name: string, fn: (task: TaskContext) => Promise<T> | T, options?: TaskOptions): Promise<T>;
  /** Durable sleep: the run suspends (freeing the worker) and continues on any worker once `durationMs` has passed. */
  sleep(name: string, durationMs: number): Promise<void>;
  /**
   * Suspends until `POST /v1/runs/:id/events/:name` delivers data (an event sent before the run
   * waits is kept for it), or until `timeoutMs` passes, which resolves as `{timedOut: true}`. With
   * `match`, only an event whose data has these values at these dotted paths resolves it (the others
   * are kept for other waits): `{ match: { orderId: 'o-1', 'customer.tier': 'gold' } }`.
   */
  waitForEvent<T = JsonValue>(name: string, options?: { timeoutMs?: number; match?: EventMatch }): Promise<EventResult<T>>;
  /**
   * Waits for several branches at once (`branch.event`, `branch.sleep`, `branch.task`, `branch.child`) and resolves
   * with the one that finished first: `{ index, value }`. The choice is recorded: a replay resolves the same branch
   * whatever the timing. The others do not fire later (their events are kept for later waits; a losing child run
   * goes on by itself). A failed task or child that wins is thrown.
   */
  any<const B extends readonly Branch[]>(name: string, branches: B): Promise<AnyResult<B>>;
  /**
   * Waits for every branch and resolves with their values in the list's order; the run suspends until the last
   * finishes. A failed task or child is thrown once all have finished (the first in the list).
   */
  all<const B extends readonly Branch[]>(name: string, branches: B): Promise<AllResult<B>>;
  /** Starts a child run and resolves with its id without waiting for it. */
  startChild<I>(
    name: string,
    workflow: (WorkflowRef & { handler?: (ctx: WorkflowContext, input: I) => unknown }) | WorkflowClass<I>,
    input: I,
    options?: ChildOptions,
  ): Promise<string>;
  /**
   * Starts a child run and suspends until it finishes; resolves with its output, or throws
   * ChildRunFailedError (failed or cancelled) or ChildRunTimeoutError (`timeoutMs` passed).
   */
  child<I, O>(
    name: string,
    workflow: WorkflowDefinition<I, O> | WorkflowClass<I, O> | WorkflowRef,
    input: I,
    options?: ChildOptions & { timeoutMs?: number },
  ): Promise<O>;
  /**
   * Makes a completion token for an outside system (a payment provider, an approval page) to finish a step with.
   * The token is recorded in the run's history before this resolves, and is the same on every re-execution: hand
   * it out from a task, then await `result`.
   *
   * ```ts
   * const { token, result } = await ctx.awaitExternal<{ paid: boolean }>({ name: 'payment', timeoutMs: 3_600_000 });
   * await ctx.task('request-payment', () => payments.request(order, `${publicUrl}/v1/completions/${token}`));
   * const { paid } = await result;
   * ```
   */
  awaitExternal<T = JsonValue>(options?: AwaitExternalOptions): Promise<ExternalCompletion<T>>;
  /**
   * Exposes `value` under `name` for `GET /v1/runs/:id/queries/:name` (`client.query`, `wf runs query`): the last
   * value exposed under a name is the answer, kept after the run ends. It is recorded with the run's next write (a
   * step, its suspension or its outcome), never with a request of its own; a replay exposing it again changes
   * nothing. `name`: an identifier (letters, digits, '.', '_', '-'); a value at most 64 KiB of JSON; at most 100 names
   * a run (exposed values and query handlers together). Refused at once (InvalidRequestError) otherwise.
   */
  expose(name: string, value: JsonValue): void;
  /**
   * A query handler: its answer is what `GET /v1/runs/:id/queries/:name` returns. The coordinator runs no workflow
   * code, so the worker calls `handler` after each step and before the run suspends or ends, and records its answer
   * as `expose` would (only when it changed). Keep it a cheap, pure read of the handler's state.
   *
   * ```ts
   * let shipped = 0;
   * ctx.onQuery('shipped', () => shipped);
   * ```
   */
  onQuery(name: string, handler: () => JsonValue): void;
  /**
   * Reports progress (any JSON of at most 4 KiB, e.g. `{ done: 40, of: 100 }` or a long step's partial output):
   * kept as the run's `progress` (the last value, also after it ends) and streamed live to `client.watch`, `wf runs
   * watch` and the feed. Coalesced: at most one value per `progressIntervalMs` of the worker (500 ms) is recorded,
   * the last one reported; the last before the run suspends or ends always is. Call it freely, even inside a task.
   */
  progress(value: JsonValue): void;
  /**
   * Handles the update `name` (declared in the workflow's `updates`) with `handler`: a client's
   * `update(run, name, input)` is applied where the run waits (a sleep, an event or a child wait; never in the
   * middle of a task), after the updates sent before it, and answered with what the handler returns (or throws:
   * the caller gets the error, the run goes on). The update and its answer are recorded in the run's history, so a
   * replay applies it at the same wait again (the handler runs again, its recorded answer stands). Register it
   * before the run's first wait, typically at the top of the handler; an update applied while none is registered
   * fails with UpdateNotHandled. The handler may change the run's state (closures of the workflow's handler) and
   * may be async, but takes no step (`ctx.task`, `ctx.sleep`, … throw InvalidStepError inside it).
   *
   * ```ts
   * const items: string[] = [];
   * ctx.handleUpdate('addItem', (item: { sku: string }) => items.push(item.sku));
   * await ctx.waitForEvent('checkout');
   * ```
   */
  handleUpdate<I = JsonValue, O = JsonValue>(name: string, handler: (input: I) => O | Promise<O>): void;
  /**
   * Guards a change to the code of runs already in flight: true for a run that reaches this point under the new
   * code, false for a run whose recorded history went past it under the old code. The answer is recorded in the
   * run's history (a `patch` step, on new ground), so its replays take the same branch. A run decides each id once:
   * later calls with it answer the same. `id` names the change: 1-200 characters, no ':' or '#'.
   *
   * ```ts
   * if (ctx.patched('send-receipt')) await ctx.task('receipt', sendReceipt);
   * ```
   */
  patched(id: string): boolean;
  /**
   * The clean-up once no run can take a patch's old branch (every run recorded before it has ended): call it where
   * `patched(id)` was, and keep only the new branch. It consumes the patch's marker where a run recorded one and
   * records nothing, so runs recorded with and without the marker both replay.
   */
  deprecatePatch(id: string): void;
}

/**
 * Flow control of a workflow version, enforced by the coordinators across every worker (registered by
 * the workers that host it). A limit set through the API (PUT /v1/workflows/:name/:version/limits)
 * wins over the one declared here until it is cleared.
 */
export interface WorkflowLimits {
  /** At most this many runs of the version running at once (sleeping or waiting runs do not count). */
  readonly concurrency?: number;
  /** At most this many runs of one `concurrencyKey` (given when a run is started) running at once. */
  readonly concurrencyPerKey?: number;
  /** At most this many runs started per second (a token bucket holding one second's worth); the others wait. */
  readonly ratePerSecond?: number;
  /**
   * At most this many runs of one `concurrencyKey` started per second (a token bucket per key, holding one
   * second's worth); the others of the key are delayed to their tokens. Runs without a key are not limited by it.
   */
  readonly ratePerKeyPerSecond?: number;
}

/**
 * A schedule declared with its workflow version: the coordinators create, change and delete it as
 * workers register the code (see the README's Schedules). Exactly one of `cron` and `intervalMs`;
 * `defineWorkflow` refuses one the coordinator would refuse (an InvalidRequestError with its reason).
 */
export interface WorkflowSchedule<I = JsonValue> {
  /** Names it within its workflow version (the same name in a new declaration changes that schedule). */
  readonly name: string;
  /** 5 fields, or 6 with seconds first: `0 30 9 * * 1-5` is 09:30:00 on weekdays. */
  readonly cron?: string;
  readonly intervalMs?: number;
  /** The IANA time zone of `cron` (default UTC). */
  readonly timezone?: string;
  readonly input?: I;
  readonly shard?: string;
  readonly priority?: number;
  /** While its previous run is unfinished: `skip` (default), `allow`, or `cancel-previous`. */
  readonly overlap?: ScheduleOverlap;
  /** Fire times that passed while no coordinator was up: `none`, `latest` (default), or `all`. */
  readonly catchUp?: ScheduleCatchUp;
  /** Created paused; afterwards pausing and resuming is the API's (a pause survives registrations). */
  readonly paused?: boolean;
}

/**
 * A workflow version as declared, its code aside: what `defineWorkflow` takes beside the handler, and what
 * `@Workflow` (@nest-durable/worker) takes for a class.
 */
export interface WorkflowDeclaration<I = JsonValue> {
  readonly name: string;
  readonly version: string;
  /** Workflow-level retry: a failed run runs again (resuming from its completed steps) as its next attempt. */
  readonly retry?: RetryPolicy;
  readonly limits?: WorkflowLimits;
  /**
   * How long the coordinator keeps this version's finished runs (with their steps and history) and its
   * dead letters, in ms, instead of its RUN_RETENTION_MS; 0 keeps them. Registered by the workers that
   * host it; RUN_RETENTION_OVERRIDES on the coordinator wins over it.
   */
  readonly retentionMs?: number;
  /** Runs started on a schedule (a cron expression or an interval), reconciled when workers register. */
  readonly schedules?: readonly WorkflowSchedule<I>[];
  /**
   * The updates the workflow answers (see `ctx.handleUpdate`), by name, each with the schema its input must match
   * (TypeBox or plain JSON Schema, as `inputSchema`; absent: any JSON input). Registered by the workers that host the
   * version: the coordinators refuse an update of a name not declared (404 `update_not_declared`) or an input that
   * does not match (400 `invalid_input`) before it reaches the run.
   */
  readonly updates?: { readonly [name: string]: UpdateDeclaration };
  /**
   * The schema a run's input must match: a TypeBox schema (`Type.Object({...})`) or a plain JSON Schema object.
   * Registered by the workers that host the version; the coordinators refuse a start whose input does not match
   * (400 `invalid_input`, nothing created). Absent: any JSON input. Refused here (an InvalidRequestError,
   * `invalid_input_schema` or `input_schema_too_large`) when it is not a JSON Schema object the check supports.
   */
  readonly inputSchema?: object;
}

/** An update a workflow declares (see WorkflowDeclaration.updates). */
export interface UpdateDeclaration {
  readonly inputSchema?: object;
}

export interface WorkflowDefinition<I = JsonValue, O = JsonValue> extends WorkflowDeclaration<I> {
  readonly handler: (ctx: WorkflowContext, input: I) => Promise<O>;
}

/** Declares a workflow whose input is typed by its TypeBox `inputSchema` (the handler's `input` is its static type). */
export function defineWorkflow<S extends TypedInputSchema, O = JsonValue>(
  definition: WorkflowDefinition<InputOfSchema<S>, O> & { readonly inputSchema: S },
): WorkflowDefinition<InputOfSchema<S>, O>;
/** Declares a workflow: a name, a version and a handler. Inputs and outputs are JSON. */
export function defineWorkflow<I = JsonValue, O = JsonValue>(definition: WorkflowDefinition<I, O>): WorkflowDefinition<I, O>;
export function defineWorkflow<I, O>(definition: WorkflowDefinition<I, O>): WorkflowDefinition<I, O> {
  checkWorkflowDeclaration(definition);
  return Object.freeze({ ...definition, ...(definition.limits ? { limits: Object.freeze({ ...definition.limits }) } : {}) });
}

/** Refuses, as the coordinator would, a declaration's limits, schedules or input schema (throws the refusal). */
export function checkWorkflowDeclaration(declaration: WorkflowDeclaration<unknown>): void {
  if (declaration.limits) checkLimits(declaration.name, declaration.limits);
  // The coordinator's own check (it would refuse the worker's whole registration over one bad schedule).
  if (declaration.schedules) checkDeclaredSchedules(declaration.name, declaration.version, declaration.schedules);
  if (declaration.inputSchema !== undefined) checkInputSchema(declaration);
  if (declaration.updates !== undefined) checkUpdates(declaration);
}

/** The declared updates' names and input schemas, as the coordinator reads them (it would refuse the worker's registration). */
function checkUpdates({ name, version, updates = {} }: WorkflowDeclaration<unknown>): void {
  const names = Object.keys(updates);
  if (names.length > DECLARED_UPDATES_MAX) throw new TypeError(`workflow ${name} ${version}: at most ${DECLARED_UPDATES_MAX} updates`);
  for (const update of names) {
    parseIdentifier(update, 'update_name');
    const { inputSchema } = updates[update];
    if (inputSchema !== undefined) readInputSchema(inputSchema, `workflow ${name} ${version}: update ${update}: `);
  }
}

/** The input schema as the coordinator reads it, and the declared schedules' inputs against it (their runs would start with them). */
function checkInputSchema({ name, version, inputSchema, schedules = [] }: WorkflowDeclaration<unknown>): void {
  readInputSchema(inputSchema, `workflow ${name} ${version}: `);
  const check = compileInputCheck(inputSchema);
  for (const schedule of schedules) {
    const mismatch = check.firstMismatch(schedule.input ?? null);
    if (mismatch) throw new InvalidRequestError('invalid_input', `workflow ${name} ${version}: schedule ${schedule.name}: ${mismatch}`);
  }
}

/** The coordinator accepts the same ranges (packages/common/src/contract/workflow-control.contracts.ts). */
function checkLimits(name: string, limits: WorkflowLimits): void {
  const known = new Set(['concurrency', 'concurrencyPerKey', 'ratePerSecond', 'ratePerKeyPerSecond']);
  for (const field of Object.keys(limits)) if (!known.has(field)) throw new TypeError(`workflow ${name}: limits.${field} is not a limit`);
  for (const field of ['concurrency', 'concurrencyPerKey'] as const) {
    const value = limits[field];
    if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= 100_000)) {
      throw new TypeError(`workflow ${name}: limits.${field} must be an integer from 1 to 100000`);
    }
  }
  for (const field of ['ratePerSecond', 'ratePerKeyPerSecond'] as const) {
    const rate = limits[field];
    if (rate !== undefined && !(typeof rate === 'number' && rate > 0 && rate <= 100_000)) {
      throw new TypeError(`workflow ${name}: limits.${field} must be a number above 0, at most 100000`);
    }
  }
}

/** The wait before try number `attempt + 1`, after `attempt` tries failed. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = policy.delayMs ?? 100;
  const exponential = (policy.backoff ?? 'exponential') === 'exponential';
  const cap = exponential ? Math.min(policy.maxDelayMs ?? 60_000, base * 2 ** (attempt - 1)) : base;
  const jitter = policy.jitter ?? exponential;
  return Math.round(jitter ? random() * cap : cap);
}
