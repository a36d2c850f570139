import type {
  CompletionAccepted,
  CompletionError,
  BulkRunsResult,
  DeadLetterPage,
  EventAccepted,
  FeedEvent,
  JsonValue,
  QueryAnswer,
  RunValues,
  RedriveResult,
  RunPage,
  RunTransitions,
  RunView,
  StartedRunView,
  SchedulePage,
  ScheduleView,
  Stats,
  StatsWindow,
  Tags,
  TriggeredSchedule,
  TypedWorkflow,
  WorkerList,
  WorkflowClass,
  WorkflowLimits,
  WorkflowName,
  WorkflowTarget,
  WorkflowView,
  UpdateView,
} from '@nest-durable/common';
import { API, type InputOf, isTerminalStatus, type OutputOf, tagFilters, WAIT_MS_MAX, workflowNameOf } from '@nest-durable/common';
import { openFeed } from './feed-events';
import { type WatchEvent, type WatchOptions, watchRun } from './run-watch';
import { JsonHttpClient } from './json-http.client';
import { sendUpdate, type UpdateOptions } from './updates';
import { bulkBody, startBody, traceHeaders } from './requests';
import type {
  BulkRunsOptions,
  FeedFilter,
  ListDeadLettersOptions,
  ListRunsOptions,
  ListSchedulesOptions,
  RunFilterOptions,
  RunHandle,
  ScheduleOptions,
  StartedRun,
  StartManyEntry,
  StartRunOptions,
  TypedRunView,
  WaitOptions,
  WorkflowClientOptions,
} from './workflow.client.types';

/** A workflow whose input and output types are known: a `@Workflow` class or a definition. */
type TypedTarget = WorkflowClass<never> | TypedWorkflow<never, unknown>;

/**
 * The typed client for users' own services and the `wf` CLI: one method per route of the client API
 * (runs, schedules, dead letters, workers). An error answer rejects with the DurableError subclass its reason names
 * (`RunNotFoundError`, …), with the answer's `statusCode` (see AnsweredError); an unreachable coordinator with
 * `CoordinatorUnavailableError`.
 */
export class WorkflowClient {
  private readonly http: JsonHttpClient;

  constructor(options: WorkflowClientOptions) {
    this.http = new JsonHttpClient(options.url, {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    });
  }

  /**
   * Starts a run of a `@Workflow` class or a definition (its input checked against the workflow's type; the
   * handle's result has its output type), or of a workflow named by its name and version.
   */
  start<W extends TypedTarget>(workflow: W, input: InputOf<W>, options?: StartRunOptions): Promise<StartedRun<OutputOf<W>>>;
  // Not a definition (`handler`): one given a wrong input must not fall through to here.
  start(workflow: WorkflowName & { handler?: never }, input?: unknown, options?: StartRunOptions): Promise<StartedRun>;
  async start(workflow: WorkflowTarget, input?: unknown, { trace: joined, ...options }: StartRunOptions = {}): Promise<StartedRun> {
    const body = startBody({ workflow, input, ...options });
    return this.handle(await this.http.call(API.startRun, { body }, { headers: traceHeaders(joined) }));
  }

  /**
   * Starts up to 1,000 runs in one request and one transaction; the runs come back in the order
   * given (an idempotency key already used gives the existing run). They join the trace of the caller's active
   * span, if it has one.
   */
  async startMany<const W extends readonly WorkflowTarget[]>(
    runs: { [K in keyof W]: StartManyEntry<W[K]> },
  ): Promise<{ [K in keyof W]: StartedRun<OutputOf<W[K]>> }> {
    const { runs: started } = await this.http.call(API.startRuns, { body: { runs: runs.map(startBody) } }, { headers: traceHeaders() });
    return started.map((run) => this.handle(run)) as { [K in keyof W]: StartedRun<OutputOf<W[K]>> };
  }

  /** The run with its recorded steps (`tasks`), in the order they were recorded. */
  get(runId: string): Promise<RunView> {
    return this.http.call(API.getRun, { params: { id: runId } });
  }

  /** One page of runs, newest first (without their steps); pass `nextCursor` back as `cursor` for the next. */
  list({ tags, ...options }: ListRunsOptions = {}): Promise<RunPage> {
    return this.http.call(API.listRuns, { query: { ...options, tag: tags && tagFilters(tags) } });
  }

  /**
   * Resolves with the run once it is terminal (completed, failed or cancelled), or as it is when
   * `timeoutMs` has passed. Each request long-polls the coordinator, so no time is lost polling.
   * Given the handle a start returned, its `output` has the workflow's output type.
   */
  waitForResult<O>(run: RunHandle<O>, options?: WaitOptions): Promise<TypedRunView<O>>;
  waitForResult(runId: string, options?: WaitOptions): Promise<RunView>;
  async waitForResult(run: string | RunHandle<unknown>, options: WaitOptions = {}): Promise<RunView> {
    const runId = typeof run === 'string' ? run : run.id;
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      options.signal?.throwIfAborted();
      const waitMs = Math.max(0, Math.min(WAIT_MS_MAX, deadline - Date.now()));
      const view = await this.http.call(API.runResult, { params: { id: runId }, query: { waitMs } }, { signal: options.signal });
      if (isTerminalStatus(view.status) || Date.now() >= deadline) return view;
    }
  }

  /** Cancels the run and its unfinished child runs; `409 run_terminal` if it already ended. */
  cancel(runId: string): Promise<RunView> {
    return this.http.call(API.cancelRun, { params: { id: runId } });
  }

  /** Runs a failed run again as its next attempt, keeping its completed steps; `409 run_not_failed` otherwise. */
  retry(runId: string): Promise<RunView> {
    return this.http.call(API.retryRun, { params: { id: runId } });
  }

  /**
   * Starts a new run as the finished run was started (its workflow version, shard, priority, concurrency key and
   * tags, or `tags`), with `input` or else its input, tagged `rerun-of: <runId>`; `409 run_not_finished` while it runs.
   */
  rerun(runId: string, options: { input?: JsonValue; tags?: Tags } = {}): Promise<StartedRunView> {
    return this.http.call(API.rerunRun, { params: { id: runId }, body: options });
  }

  /**
   * Cancels up to `limit` of the unfinished runs `filter` matches, newest first (each as `cancel` does); call again
   * with the answer's `before` until it is null. `dryRun` counts them first (what a confirmation says).
   */
  cancelRuns(filter: RunFilterOptions, options: BulkRunsOptions = {}): Promise<BulkRunsResult> {
    return this.http.call(API.cancelRuns, { body: bulkBody(filter, options) });
  }

  /** Retries up to `limit` of the failed runs `filter` matches, newest first (each as `retry` does); as `cancelRuns` goes on. */
  retryRuns(filter: RunFilterOptions, options: BulkRunsOptions = {}): Promise<BulkRunsResult> {
    return this.http.call(API.retryRuns, { body: bulkBody(filter, options) });
  }

  /** Ends the run's durable sleep now; `409 run_not_sleeping` if it is not sleeping. */
  wake(runId: string): Promise<RunView> {
    return this.http.call(API.wakeRun, { params: { id: runId } });
  }

  /**
   * Sends the event `name` to the run: `delivered` if it was waiting for it (it resumes), otherwise
   * kept for its next wait of that name. `409 run_terminal` if the run has ended.
   */
  sendEvent(runId: string, name: string, data?: JsonValue): Promise<EventAccepted> {
    return this.http.call(API.sendEvent, { params: { id: runId, name }, body: data === undefined ? undefined : { data } });
  }

  /**
   * Completes the step a workflow made completion token `token` for (`ctx.awaitExternal`) with `data`: `delivered`
   * if the run was waiting on it (it resumes), otherwise kept until it waits. Needs no client token: the completion
   * token is the credential. `404 completion_token_not_found`, `409 completion_token_used` (a token is used once),
   * `410 completion_token_expired` (timed out, or its run ended).
   */
  complete(token: string, data?: JsonValue): Promise<CompletionAccepted> {
    return this.http.call(API.completeExternal, { params: { token }, body: data === undefined ? {} : { data } });
  }

  /**
   * Fails the step of completion token `token`: the waiting workflow's `await result` throws a CompletionFailedError
   * carrying `error` (its `name` defaults to `Error`). Refused as `complete` is.
   */
  fail(token: string, error: CompletionError): Promise<CompletionAccepted> {
    return this.http.call(API.completeExternal, { params: { token }, body: { error } });
  }

  /**
   * Sends update `name` (declared by the run's workflow) to the run and resolves with its handler's answer. The run
   * applies it where it waits, after the updates sent before it, and records it in its history. Rejects with
   * UpdateFailedError when the handler threw (`update.error`; the run goes on), UpdateRefusedError when the run ended
   * before applying it, UpdateNotDeclaredError, InvalidRequestError (`invalid_input`: the declared schema refused it)
   * or RunAlreadyTerminalError (nothing sent), and UpdatePendingError when `timeoutMs` passed first (it stays sent).
   */
  update<O = JsonValue>(run: string | { readonly id: string }, name: string, input?: JsonValue, options: UpdateOptions = {}): Promise<O> {
    return sendUpdate(this.http, typeof run === 'string' ? run : run.id, name, input ?? null, options) as Promise<O>;
  }

  /** An update sent to a run, as it is, or once answered within `waitMs` (at most 60 s): pending, completed, failed or refused. */
  getUpdate(runId: string, name: string, updateId: string, waitMs = 0): Promise<UpdateView> {
    return this.http.call(API.getUpdate, { params: { id: runId, name, updateId }, query: { waitMs } });
  }

  /**
   * The run's state transitions, oldest first: a page of at most `limit` (default and most 1,000) after
   * `after`; `nextCursor`, passed back as `after`, gives the next page (null on the last).
   */
  transitions(runId: string, page: { after?: string; limit?: number } = {}): Promise<RunTransitions> {
    return this.http.call(API.runTransitions, { params: { id: runId }, query: page });
  }

  /** Run counts and throughput over the last hour (or day), queue depths, the outbox, dead letters and workers online. */
  stats(window: StatsWindow = '1h'): Promise<Stats> {
    return this.http.call(API.stats, { query: { window } });
  }

  /**
   * The live feed of run changes, opened when iteration starts: `open` once it is (read what you show after
   * it), then `run` per transition, `resync` when changes may have been missed (re-read). Ends when `signal`
   * aborts (the iteration then throws its reason), when the loop breaks, or when the coordinator closes it
   * (shutting down): open it again.
   */
  feed(filter: FeedFilter = {}, signal?: AbortSignal): AsyncGenerator<FeedEvent> {
    return openFeed(this.http, filter, signal);
  }

  /**
   * What the run recorded under `name`: the value it exposed (`ctx.expose`, or its query handler's answer), or
   * else its last completed task of that name. Read from stored state (nothing runs), also after the run ended;
   * `404 query_not_found` when it has neither, `404 run_not_found` when there is no such run.
   */
  query(run: string | { id: string }, name: string): Promise<QueryAnswer> {
    return this.http.call(API.queryRun, { params: { id: typeof run === 'string' ? run : run.id, name } });
  }

  /** Every value the run exposed (`ctx.expose`, query handlers' answers), by name; `404 run_not_found` when there is no such run. */
  values(run: string | { id: string }): Promise<RunValues> {
    return this.http.call(API.listRunValues, { params: { id: typeof run === 'string' ? run : run.id } });
  }

  /**
   * Follows a run until it ends, as an async iterator (see WatchEvent): `run` when it changes, `progress` for each
   * progress it reports (`ctx.progress`), live through the coordinator's feed. Ends after the terminal `run`.
   *
   * ```ts
   * for await (const event of client.watch(started)) if (event.type === 'progress') console.log(event.progress);
   * ```
   */
  watch(run: string | { id: string }, options: WatchOptions = {}): AsyncGenerator<WatchEvent, void> {
    return watchRun(this, typeof run === 'string' ? run : run.id, options);
  }

  /** One page of dead letters (what dispatch gave up on), newest first. */
  listDeadLetters(options: ListDeadLettersOptions = {}): Promise<DeadLetterPage> {
    return this.http.call(API.listDeadLetters, { query: options });
  }

  /** Puts the dead letter's run back in motion (a new attempt or a new wake-up) and removes the letter. */
  redriveDeadLetter(id: string): Promise<RedriveResult> {
    return this.http.call(API.redriveDeadLetter, { params: { id } });
  }

  /** Removes the dead letter; `404 dead_letter_not_found` if there is none. */
  async deleteDeadLetter(id: string): Promise<void> {
    await this.http.call(API.deleteDeadLetter, { params: { id } });
  }

  /** Creates a schedule that starts runs of `workflow` at the times `options` give; `400` with a reason for a bad cron or time zone. */
  createSchedule(workflow: WorkflowTarget, options: ScheduleOptions): Promise<ScheduleView> {
    const { name, version } = workflowNameOf(workflow);
    return this.http.call(API.createSchedule, { body: { workflow: name, version, ...options } });
  }

  /** One page of schedules, newest first. */
  listSchedules(options: ListSchedulesOptions = {}): Promise<SchedulePage> {
    return this.http.call(API.listSchedules, { query: options });
  }

  getSchedule(id: string): Promise<ScheduleView> {
    return this.http.call(API.getSchedule, { params: { id } });
  }

  /** Deletes a schedule (its runs stay); `409 schedule_in_code` for one declared in code that online workers host. */
  async deleteSchedule(id: string): Promise<void> {
    await this.http.call(API.deleteSchedule, { params: { id } });
  }

  /** Stops it firing until resumed; a pause of a schedule declared in code survives its workers registering again. */
  pauseSchedule(id: string): Promise<ScheduleView> {
    return this.http.call(API.pauseSchedule, { params: { id } });
  }

  /** Fires again from the next fire time after now (times that passed while paused are not caught up). */
  resumeSchedule(id: string): Promise<ScheduleView> {
    return this.http.call(API.resumeSchedule, { params: { id } });
  }

  /** Starts a run of the schedule now, paused or not and whatever its overlap policy. */
  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    return this.http.call(API.triggerSchedule, { params: { id } });
  }

  /** The worker registry: every worker seen in the last hour, online ones first, with what each hosts. */
  listWorkers(): Promise<WorkerList> {
    return this.http.call(API.listWorkers, {});
  }

  /** The workflow versions known, with their pauses and limits. */
  async listWorkflows(): Promise<WorkflowView[]> {
    return (await this.http.call(API.listWorkflows, {})).items;
  }

  /** Pauses the version (or one shard of it): queued runs wait, running ones finish, starts are still accepted. */
  pauseWorkflow(workflow: WorkflowTarget, options: { shard?: string } = {}): Promise<WorkflowView> {
    return this.http.call(API.pauseWorkflow, { params: workflowNameOf(workflow), body: options });
  }

  /** Resumes the version (every shard), or with `shard` that shard. */
  resumeWorkflow(workflow: WorkflowTarget, options: { shard?: string } = {}): Promise<WorkflowView> {
    return this.http.call(API.resumeWorkflow, { params: workflowNameOf(workflow), body: options });
  }

  /** Sets the version's limits (replacing those set before through the API); each one set wins over the code's. */
  setWorkflowLimits(workflow: WorkflowTarget, limits: WorkflowLimits): Promise<WorkflowView> {
    return this.http.call(API.setWorkflowLimits, { params: workflowNameOf(workflow), body: limits });
  }

  /** Clears the limits set through the API: the code's apply again. */
  clearWorkflowLimits(workflow: WorkflowTarget): Promise<WorkflowView> {
    return this.http.call(API.clearWorkflowLimits, { params: workflowNameOf(workflow) });
  }

  /**
   * The run as answered, with its handle's methods beside its fields: not enumerable, so the run still
   * compares, spreads and serialises as the view it is.
   */
  private handle<O = JsonValue>(run: StartedRunView): StartedRun<O> {
    const methods: Pick<RunHandle<O>, 'result' | 'get'> = {
      result: (options) => this.waitForResult(run.id, options) as Promise<TypedRunView<O>>,
      get: () => this.get(run.id) as Promise<TypedRunView<O>>,
    };
    return Object.defineProperties(run, { result: { value: methods.result }, get: { value: methods.get } }) as StartedRun<O>;
  }
}
