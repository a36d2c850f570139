import type {
  InputOf,
  JsonValue,
  RunStatus,
  RunView,
  ScheduleCatchUp,
  ScheduleOverlap,
  StartWarning,
  Tags,
  TraceCarrier,
  WorkflowTarget,
} from '@nest-durable/common';

/*
 * What WorkflowClient's methods take and answer, beside the contract's own types (@nest-durable/common).
 */

export interface WorkflowClientOptions {
  /** Coordinator base URL, e.g. http://127.0.0.1:3000 */
  url: string;
  /** The coordinator's CLIENT_TOKEN. */
  token?: string;
  headers?: Record<string, string>;
}

export interface StartOptions {
  /** Starting twice with the same key (per workflow) returns the first run. */
  idempotencyKey?: string;
  /** Routing shard: only workers serving it (WORKER_SHARDS) take the run. */
  shard?: string;
  /** Higher runs first among due runs; default 0. */
  priority?: number;
  /** Not before this time. */
  runAt?: Date;
  /** Runs with the same key share their version's `concurrencyPerKey` slots and `ratePerKeyPerSecond` tokens. */
  concurrencyKey?: string;
  /** Metadata to find the run by: up to 16 keys with text values (`list({ tags })`). */
  tags?: Tags;
}

/** How `start` is called: StartOptions, and the trace the run joins. */
export interface StartRunOptions extends StartOptions {
  /**
   * The W3C trace context the run's spans join (its `traceparent`, and `tracestate`). Default: the active span of
   * the caller's OpenTelemetry context, if it has one; otherwise the run starts no trace of the caller's.
   */
  trace?: TraceCarrier;
}

/** One run of a `startMany` batch: its input is typed by its workflow's (a class's or a definition's). */
export interface StartManyEntry<W extends WorkflowTarget = WorkflowTarget> extends StartOptions {
  workflow: W;
  input?: InputOf<W>;
}

export interface ListRunsOptions {
  workflow?: string;
  version?: string;
  status?: RunStatus;
  /** Needs `workflow` (keys are unique per workflow). */
  idempotencyKey?: string;
  /** ISO 8601: runs created from this time on... */
  createdAfter?: string;
  /** ...and before this one. */
  createdBefore?: string;
  /** Only runs that have every one of these tags. */
  tags?: Tags;
  /** 1–500, default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** The runs list's filter: which runs a bulk cancel or retry acts on. */
export type RunFilterOptions = Omit<ListRunsOptions, 'limit' | 'cursor'>;

/** One request of a bulk cancel or retry. */
export interface BulkRunsOptions {
  /** Only count the runs it would act on (and answer the `before` that leaves out runs created after the count). */
  dryRun?: boolean;
  /** The `before` the previous answer gave (or the dry run's): runs below it only. */
  before?: string;
  /** 1–1,000 runs this request acts on, default 500. */
  limit?: number;
}

export interface ListDeadLettersOptions {
  /** 1–500, default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface FeedFilter {
  /** Only this run's changes. */
  runId?: string;
  /** Only changes of runs of this workflow. */
  workflow?: string;
}

/** A schedule: exactly one of `cron` and `intervalMs`. */
export interface ScheduleOptions {
  /** 5 fields, or 6 with seconds first: `0 30 9 * * 1-5` is 09:30:00 on weekdays. */
  cron?: string;
  /** Every this many ms (100 ms to a year), the first one this long after the schedule is created or resumed. */
  intervalMs?: number;
  /** The IANA time zone of `cron` (default UTC). */
  timezone?: string;
  input?: JsonValue;
  shard?: string;
  priority?: number;
  /** While the previous run is unfinished: `skip` (the default) starts none, `allow` starts one anyway, `cancel-previous` cancels it first. */
  overlap?: ScheduleOverlap;
  /** Fire times that passed while no coordinator was up: run `none`, the `latest` (the default), or `all`. */
  catchUp?: ScheduleCatchUp;
  /** Created paused: it fires once resumed. */
  paused?: boolean;
}

export interface ListSchedulesOptions {
  workflow?: string;
  /** 1–500, default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface WaitOptions {
  /** Give up waiting after this long and return the run as it is; default 60 s, `Infinity` waits until it ends. */
  timeoutMs?: number;
  /** Stops waiting: the pending request is aborted and the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A run whose output has its workflow's output type: the handler's result once `status` is `completed`, null until then (and for good if it fails or is cancelled). */
export type TypedRunView<O> = Omit<RunView, 'status' | 'output'> &
  ({ status: 'completed'; output: O } | { status: Exclude<RunStatus, 'completed'>; output: null });

/** A run started through the client, which knows its workflow's output type. */
export interface RunHandle<O = JsonValue> {
  readonly id: string;
  readonly workflow: string;
  readonly version: string;
  /** Waits for the run to end, as `waitForResult` does. */
  result(options?: WaitOptions): Promise<TypedRunView<O>>;
  /** The run as it is now, with its recorded steps. */
  get(): Promise<TypedRunView<O>>;
}

/**
 * What a start answers: the run as the coordinator created it (or found it, by its idempotency key), and its handle;
 * `warning` when the start warns of something, e.g. `unregistered_workflow_version` (no worker has ever registered
 * the version: a misspelled name?). The run was started all the same.
 */
export type StartedRun<O = JsonValue> = TypedRunView<O> & RunHandle<O> & { readonly warning?: StartWarning };
