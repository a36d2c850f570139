import {
  EventAccepted,
  InvalidRequestError,
  isTerminalStatus,
  JsonValue,
  ListRunsQuery,
  type QueryAnswer,
  type RunValues,
  QueryNotFoundError,
  RunAlreadyTerminalError,
  RunNotFoundError,
  RunNotSleepingError,
  RunNotFailedError,
  RunNotFinishedError,
  RunPage,
  RERUN_OF_TAG,
  type RerunRequest,
  TAGS_MAX,
  RunTransitions,
  RunView,
  StartRunRequest,
  type StartWarning,
  type RunTransitionsQuery,
  type StartedRunView,
} from '@nest-durable/common';
import { ControlOutcome, type NewRun, RunControlRepository, type StartedRun } from '@app/run-store';
import { NotificationListener, RUN_FINISHED_CHANNEL } from '@app/outbox';
import { RunEntity, uuidv7 } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { type Context, ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { inSpan, traceColumnsOf } from '../tracing/coordinator-tracing';
import { ResultWaits } from '../hand-off/result-waits.service';
import { type HandOff, RunLifecycle } from '../hand-off/run-lifecycle.service';
import { InputSchemas } from '../workflows/input-schemas.service';
import { RunsRepository } from './runs.repository';
import { toRunView } from './run-view';

function newRun(request: StartRunRequest, trace: Pick<NewRun, 'traceparent' | 'tracestate'>): NewRun {
  return {
    id: uuidv7(),
    workflow: request.workflow,
    version: request.version,
    shard: request.shard ?? null,
    input: request.input,
    priority: request.priority,
    idempotencyKey: request.idempotencyKey ?? null,
    runAt: request.runAt ?? null,
    parentId: null,
    concurrencyKey: request.concurrencyKey ?? null,
    tags: request.tags ?? {},
    ...trace,
  };
}

/**
 * The client API's use cases of runs: starting them, reading them, waiting for their results, and the
 * commands (cancel, events, wake, retry). What this coordinator does when a run starts or ends is RunLifecycle's.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly repository: RunsRepository,
    private readonly control: RunControlRepository,
    private readonly lifecycle: RunLifecycle,
    private readonly listener: NotificationListener,
    private readonly resultWaits: ResultWaits,
    private readonly inputSchemas: InputSchemas,
  ) {}

  /**
   * Starts a run; with a known idempotency key returns the existing run (`created: false`). Its input is checked
   * first against its version's registered schema (InputSchemas: 400 `invalid_input`, nothing created). A run due
   * now whose queue has a claim waiting on this coordinator goes straight to that claim when it may
   * (RunLifecycle.handOffFor, RunControlRepository.start with `handedTo`): it is started running, in one commit.
   * Traced in a span of `caller`'s trace (the caller's request headers), whose context the run keeps: its worker's
   * spans are children of it.
   */
  async start(request: StartRunRequest, caller: Context = ROOT_CONTEXT): Promise<{ run: StartedRunView; created: boolean }> {
    const attributes = { 'workflow.name': request.workflow, 'workflow.version': request.version };
    return inSpan(`start ${request.workflow}`, SpanKind.SERVER, caller, attributes, async (span) => {
      const [warning] = await this.inputSchemas.check([request]);
      const run = newRun(request, traceColumnsOf(span));
      const [started] = await this.insert([run], this.lifecycle.handOffFor(run), [warning]);
      span.setAttributes({ 'workflow.run_id': started.run.id, 'workflow.created': started.created });
      return started;
    });
  }

  /**
   * Starts runs in one transaction (one NOTIFY per queue), once every input matches its version's schema (the
   * first that does not refuses the batch: nothing is started). A run whose idempotency key exists comes back as
   * the existing run. Results are in request order. One span for the batch, the parent of all its runs' spans.
   */
  async startMany(requests: StartRunRequest[], caller: Context = ROOT_CONTEXT): Promise<{ run: StartedRunView; created: boolean }[]> {
    return inSpan('start batch', SpanKind.SERVER, caller, { 'workflow.batch_size': requests.length }, async (span) => {
      const warnings = await this.inputSchemas.check(requests, (index) => `runs[${index}].`);
      const trace = traceColumnsOf(span);
      return this.insert(
        requests.map((request) => newRun(request, trace)),
        undefined,
        warnings,
      );
    });
  }

  /**
   * Inserts the runs (handing one to the claim of `handOff`, which RunLifecycle settles whatever happens) and views
   * them, each with its start's warning.
   */
  private async insert(
    runs: NewRun[],
    handOff: HandOff | undefined,
    warnings: (StartWarning | undefined)[],
  ): Promise<{ run: StartedRunView; created: boolean }[]> {
    let inserted: Map<string, StartedRun>;
    try {
      inserted = await this.control.start(runs, undefined, handOff, this.lifecycle.startsPublish);
    } catch (error) {
      this.lifecycle.startFailed(runs[0], handOff);
      throw error;
    }
    // A claim handed the run answers first; the client's answer waits for that turn (see RunLifecycle.started).
    const claimAnswers = this.lifecycle.started(inserted, handOff);
    if (claimAnswers) await claimAnswers;
    const duplicates = runs.filter((run) => !inserted.has(run.id));
    // Runs whose idempotency key was taken already come back as they are: read only when there are some.
    const existing = duplicates.length > 0 ? await this.existing(duplicates) : undefined;
    return runs.map((run, index) => {
      const created = inserted.get(run.id);
      const warning = warnings[index] ? { warning: warnings[index] } : {};
      if (created) return { run: { ...toRunView(created, undefined, created.paused), ...warning }, created: true };
      const found = existing!.runs.get(`${run.workflow}\u0000${run.idempotencyKey}`)!;
      return { run: { ...toRunView(found, undefined, existing!.paused.has(found.queue)), ...warning }, created: false };
    });
  }

  /** The runs started before with these runs' idempotency keys (keyed as RunsRepository.findByIdempotencyKeys keys them), and which of their queues are paused. */
  private async existing(duplicates: NewRun[]): Promise<{ runs: Map<string, RunEntity>; paused: Set<string> }> {
    const runs = await this.repository.findByIdempotencyKeys(duplicates.map((run) => ({ workflow: run.workflow, idempotencyKey: run.idempotencyKey! })));
    return { runs, paused: await this.repository.pausedQueues([...runs.values()]) };
  }

  /**
   * Starts a new run as the finished run `id` was started (its workflow version, shard, priority, concurrency key
   * and tags, or `tags`), with `input` or else its input, tagged `rerun-of: <id>`: a start in every other way (its
   * input checked, handed off, published). Not its idempotency key (that would answer the old run), runAt or parent.
   */
  async rerun(id: string, request: RerunRequest): Promise<StartedRunView> {
    const previous = await this.require(id);
    if (!isTerminalStatus(previous.status)) throw new RunNotFinishedError(id, previous.status);
    const tags = { ...(request.tags ?? previous.tags), [RERUN_OF_TAG]: id };
    if (Object.keys(tags).length > TAGS_MAX) {
      throw new InvalidRequestError('invalid_tags', `a rerun is tagged ${RERUN_OF_TAG}: it takes at most ${TAGS_MAX - 1} other tags (pass fewer in tags)`);
    }
    const { run } = await this.start({
      workflow: previous.workflow,
      version: previous.version,
      input: request.input === undefined ? (previous.input as JsonValue) : request.input,
      priority: previous.priority,
      ...(previous.shard !== null && { shard: previous.shard }),
      ...(previous.concurrencyKey !== null && { concurrencyKey: previous.concurrencyKey }),
      tags,
    });
    return run;
  }

  async get(id: string): Promise<RunView> {
    return this.view(await this.require(id));
  }

  /** A page of the run's transitions, oldest first, after the cursor `after` (a transition's id). */
  async transitions(id: string, { after, limit }: RunTransitionsQuery): Promise<RunTransitions> {
    const rows = await this.repository.findTransitions(id, after ?? '0', limit + 1);
    if (!rows) throw new RunNotFoundError(id);
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    return {
      items: page.map(({ id: _position, ...row }) => ({ ...row, at: row.at.toISOString() })),
      truncated: more,
      nextCursor: more ? page[page.length - 1].id : null,
    };
  }

  async list(query: ListRunsQuery): Promise<RunPage> {
    if (query.idempotencyKey !== undefined && query.workflow === undefined) {
      throw new InvalidRequestError('invalid_idempotencyKey', 'an idempotency key is unique per workflow: search by it with `workflow` too');
    }
    if (query.tag === null) return { runs: [], nextCursor: null }; // one key asked with two values: no run has both
    const runs = await this.repository.list({ ...query, limit: query.limit + 1 });
    const page = runs.slice(0, query.limit);
    const paused = await this.repository.pausedQueues(page);
    return {
      runs: page.map((run) => toRunView(run, undefined, paused.has(run.queue))),
      nextCursor: runs.length > query.limit ? page[page.length - 1].id : null,
    };
  }

  /**
   * Returns the run once it is terminal, or as it is after `waitMs`. Woken by the NOTIFY its final
   * transition sends; the wait is armed before the read so a transition in between is not missed. A
   * finish on this coordinator hands the ended run over, or at least says it ended (ResultWaits).
   */
  async waitForResult(id: string, waitMs: number): Promise<RunView> {
    const deadline = Date.now() + waitMs;
    const handOff = this.resultWaits.arm(id);
    // Set by a notification of this run's end (not by a reconnect's wake-up) or a finish here: its end has
    // committed, so its steps are final and can be read beside the run (the view needs both) instead of after it.
    let ended = false;
    const announcesEnd = (payload: string) => {
      if (payload === id) ended = true;
      return payload === id;
    };
    try {
      for (;;) {
        const left = deadline - Date.now();
        if (left > 0 && !this.listener.isClosed) await handOff.settled(left);
        const handed = handOff.finished;
        if (handed) return toRunView(handed.run, handed.hasSteps ? await this.repository.findTasks(id) : []);
        ended ||= handOff.ended;
        const remaining = deadline - Date.now();
        const wait = remaining > 0 ? this.listener.waitFor(RUN_FINISHED_CHANNEL, announcesEnd, remaining) : undefined;
        const [run, tasks] = await Promise.all([this.require(id), ended ? this.repository.findTasks(id) : undefined]).catch((error: unknown) => {
          wait?.cancel();
          throw error;
        });
        if (!wait || isTerminalStatus(run.status) || this.listener.isClosed) {
          wait?.cancel();
          return tasks && isTerminalStatus(run.status) ? toRunView(run, tasks) : this.view(run);
        }
        await wait.notified;
      }
    } finally {
      handOff.release();
    }
  }

  /** Cancels the run and its unfinished child runs. */
  async cancel(id: string): Promise<RunView> {
    this.check(id, await this.control.cancel(id), (status) => new RunAlreadyTerminalError(id, status));
    this.lifecycle.cancelled();
    return this.get(id);
  }

  async sendEvent(id: string, name: string, data: JsonValue): Promise<EventAccepted> {
    const outcome = await this.control.sendEvent(id, name, data);
    this.check(id, outcome, (status) => new RunAlreadyTerminalError(id, status));
    return { delivered: outcome.delivered };
  }

  /**
   * What the run recorded under `name` (GET /v1/runs/{id}/queries/{name}): the value it exposed (or its query
   * handler answered) if any, else the output of its last completed task of that name. Read from stored state
   * only, so a run answers the same while it runs, sleeps, or long after it ended.
   */
  async query(id: string, name: string): Promise<QueryAnswer> {
    const row = await this.repository.query(id, name);
    if (!row) throw new RunNotFoundError(id);
    if (row.hasValue) return { runId: id, name, source: 'value', value: row.value as JsonValue, updatedAt: row.valueAt!.toISOString() };
    if (row.hasTask) return { runId: id, name, source: 'task', value: row.taskOutput as JsonValue, updatedAt: row.taskAt!.toISOString() };
    throw new QueryNotFoundError(id, name);
  }

  /** Every value the run exposed (GET /v1/runs/{id}/queries), by name. */
  async values(id: string): Promise<RunValues> {
    const values = await this.repository.values(id);
    if (!values) throw new RunNotFoundError(id);
    return { runId: id, values: values.map((row) => ({ name: row.name, value: row.value as JsonValue, updatedAt: row.updatedAt.toISOString() })) };
  }

  /** Ends a durable sleep early. */
  async wake(id: string): Promise<RunView> {
    this.check(id, await this.control.wake(id), (status) => new RunNotSleepingError(id, status));
    return this.get(id);
  }

  /** Runs a failed run again, resuming from its completed steps. */
  async retry(id: string): Promise<RunView> {
    this.check(id, await this.control.retry(id), (status) => new RunNotFailedError(id, status));
    return this.get(id);
  }

  private check(id: string, outcome: ControlOutcome, refusal: (status: string) => Error): void {
    if (!outcome.previous) throw new RunNotFoundError(id);
    if (!outcome.applied) throw refusal(outcome.previous);
  }

  /** The run with its steps, and whether a pause holds it. */
  private async view(run: RunEntity): Promise<RunView> {
    const [tasks, paused] = await Promise.all([this.repository.findTasks(run.id), this.repository.pausedQueues([run])]);
    return toRunView(run, tasks, paused.has(run.queue));
  }

  private async require(id: string): Promise<RunEntity> {
    const run = await this.repository.findById(id);
    if (!run) throw new RunNotFoundError(id);
    return run;
  }
}
