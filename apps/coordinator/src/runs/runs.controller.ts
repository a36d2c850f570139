import {
  API,
  type BulkRunsResult,
  type EndpointInput,
  type EventAccepted,
  type QueryAnswer,
  type RunPage,
  type RunTransitions,
  type RunValues,
  type RunView,
  type StartedRuns,
  type StartedRunView,
} from '@nest-durable/common';
import { Controller, Headers, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Input, Route } from '../http/route.decorators';
import { BulkRunsService } from './bulk-runs.service';
import { callerContext } from '../tracing/coordinator-tracing';
import { RunsService } from './runs.service';

/** The client API: start, inspect, wait for and cancel runs. */
@Controller()
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly bulk: BulkRunsService,
  ) {}

  /** The caller's `traceparent` header, if any, makes the start's span (and so the run's) part of its trace. */
  @Route(API.startRun)
  async start(
    @Input() { body }: EndpointInput<typeof API.startRun>,
    @Headers() headers: Record<string, string | undefined>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StartedRunView> {
    const { run, created } = await this.runs.start(body, callerContext(headers));
    reply.status(created ? 201 : 200);
    return run;
  }

  /** Starts up to 1,000 runs in one transaction; runs whose idempotency key exists come back as they are. */
  @Route(API.startRuns)
  async startBatch(@Input() { body }: EndpointInput<typeof API.startRuns>, @Headers() headers: Record<string, string | undefined>): Promise<StartedRuns> {
    const started = await this.runs.startMany(body.runs, callerContext(headers));
    return { runs: started.map((entry) => entry.run) };
  }

  @Route(API.listRuns)
  list(@Input() { query }: EndpointInput<typeof API.listRuns>): Promise<RunPage> {
    return this.runs.list(query);
  }

  @Route(API.getRun)
  get(@Input() { params }: EndpointInput<typeof API.getRun>): Promise<RunView> {
    return this.runs.get(params.id);
  }

  @Route(API.runTransitions)
  transitions(@Input() { params, query }: EndpointInput<typeof API.runTransitions>): Promise<RunTransitions> {
    return this.runs.transitions(params.id, query);
  }

  /** Answered from the run's recorded state (exposed values, task results): nothing runs. */
  @Route(API.queryRun)
  query(@Input() { params }: EndpointInput<typeof API.queryRun>): Promise<QueryAnswer> {
    return this.runs.query(params.id, params.name);
  }

  @Route(API.listRunValues)
  values(@Input() { params }: EndpointInput<typeof API.listRunValues>): Promise<RunValues> {
    return this.runs.values(params.id);
  }

  @Route(API.runResult)
  result(@Input() { params, query }: EndpointInput<typeof API.runResult>): Promise<RunView> {
    return this.runs.waitForResult(params.id, query.waitMs);
  }

  /** Cancels the run and its unfinished child runs; 409 if it is already terminal. */
  @Route(API.cancelRun)
  cancel(@Input() { params }: EndpointInput<typeof API.cancelRun>): Promise<RunView> {
    return this.runs.cancel(params.id);
  }

  /** Delivers an event to a run waiting for it, or keeps it for its next wait of that name. */
  @Route(API.sendEvent)
  sendEvent(@Input() { params, body }: EndpointInput<typeof API.sendEvent>): Promise<EventAccepted> {
    return this.runs.sendEvent(params.id, params.name, body.data);
  }

  /** Ends a durable sleep now. */
  @Route(API.wakeRun)
  wake(@Input() { params }: EndpointInput<typeof API.wakeRun>): Promise<RunView> {
    return this.runs.wake(params.id);
  }

  /** Runs a failed run again as its next attempt, resuming from its completed steps. */
  @Route(API.retryRun)
  retry(@Input() { params }: EndpointInput<typeof API.retryRun>): Promise<RunView> {
    return this.runs.retry(params.id);
  }

  /** A new run of a finished run's version, with its input or a new one, tagged rerun-of. */
  @Route(API.rerunRun)
  rerun(@Input() { params, body }: EndpointInput<typeof API.rerunRun>): Promise<StartedRunView> {
    return this.runs.rerun(params.id, body);
  }

  /** Cancels (or counts, dryRun) a page of the unfinished runs a filter matches. */
  @Route(API.cancelRuns)
  cancelMatching(@Input() { body }: EndpointInput<typeof API.cancelRuns>): Promise<BulkRunsResult> {
    return this.bulk.act('cancel', body);
  }

  /** Retries (or counts, dryRun) a page of the failed runs a filter matches. */
  @Route(API.retryRuns)
  retryMatching(@Input() { body }: EndpointInput<typeof API.retryRuns>): Promise<BulkRunsResult> {
    return this.bulk.act('retry', body);
  }
}
