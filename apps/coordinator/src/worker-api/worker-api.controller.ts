import {
  API,
  type ClaimResponse,
  type EndpointInput,
  type HeartbeatResponse,
  type ReportsResponse,
  type RevisionResponse,
  type GroupResponse,
  type StepResponse,
  type StoredTask,
  type StreamDeadLetterResponse,
  type TakeRunsResponse,
  type TaskResultResponse,
} from '@nest-durable/common';
import { Controller, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { DeadLettersService } from '../dead-letters/dead-letters.service';
import { Input, Route } from '../http/route.decorators';
import { ClaimsService } from './claims.service';
import { HeartbeatsService } from './heartbeats.service';
import { OffersService } from './offers.service';
import { ReportsService } from './reports.service';
import { StepsService } from './steps.service';
import { recordReports, recordTaken } from '../tracing/coordinator-tracing';

/**
 * The worker protocol. Every write after the claim carries `expectedRevision`; a stale one gets
 * 409 `revision_conflict` and changes nothing.
 */
@Controller()
export class WorkerApiController {
  constructor(
    private readonly claims: ClaimsService,
    private readonly offers: OffersService,
    private readonly heartbeats: HeartbeatsService,
    private readonly workerReports: ReportsService,
    private readonly steps: StepsService,
    private readonly deadLetters: DeadLettersService,
  ) {}

  @Route(API.claimRuns)
  async claim(@Input() { body }: EndpointInput<typeof API.claimRuns>, @Res({ passthrough: true }) reply: FastifyReply): Promise<ClaimResponse> {
    const startTime = Date.now();
    const runs = await this.claims.claim(body, disconnected(reply.raw));
    recordTaken('claim', body.workerId, runs, startTime);
    return { runs };
  }

  /** An idle worker of a Redis subscriber offers itself to the runs started here (see OffersService). */
  @Route(API.offerRuns)
  async offer(@Input() { body }: EndpointInput<typeof API.offerRuns>, @Res({ passthrough: true }) reply: FastifyReply): Promise<ClaimResponse> {
    const startTime = Date.now();
    const closed = new Promise<void>((resolve) => reply.raw.once('close', () => resolve()));
    const runs = await this.offers.offer(body, disconnected(reply.raw), closed);
    recordTaken('offer', body.workerId, runs, startTime);
    return { runs };
  }

  @Route(API.withdrawOffer)
  withdrawOffer(@Input() { params }: EndpointInput<typeof API.withdrawOffer>): void {
    this.offers.withdraw(params.offerId);
  }

  /**
   * Takes runs for wake-ups a transport (Redis) delivered: up to one per wake-up of each queue, chosen
   * as a claim chooses them. Of the wake-ups that took nothing, those in `requeue` go back to the
   * transport (their queue still has runs waiting); the others are done with.
   */
  @Route(API.takeRuns)
  async take(@Input() { body }: EndpointInput<typeof API.takeRuns>, @Res({ passthrough: true }) reply: FastifyReply): Promise<TakeRunsResponse> {
    const startTime = Date.now();
    const taken = await this.claims.take(body, disconnected(reply.raw));
    recordTaken('take', body.workerId, taken.runs, startTime);
    return taken;
  }

  /** A Streams wake-up delivered more than MAX_DELIVERIES times: recorded, and its run failed if its claim went idle. */
  @Route(API.reportDeadLetter)
  recordDeadLetter(@Input() { body }: EndpointInput<typeof API.reportDeadLetter>): Promise<StreamDeadLetterResponse> {
    return this.deadLetters.recordStreamDeadLetter(body);
  }

  @Route(API.heartbeat)
  async heartbeat(@Input() { body }: EndpointInput<typeof API.heartbeat>): Promise<HeartbeatResponse> {
    return { lost: await this.heartbeats.heartbeat(body.runs) };
  }

  @Route(API.recordTask)
  async recordTask(@Input() { params, body }: EndpointInput<typeof API.recordTask>): Promise<TaskResultResponse> {
    return { task: await this.workerReports.recordTask(params.id, body) };
  }

  /** Task results, completions and failures of several runs in one request and one transaction. */
  @Route(API.report)
  async reports(@Input() { body }: EndpointInput<typeof API.report>): Promise<ReportsResponse> {
    const startTime = Date.now();
    const outcomes = await this.workerReports.apply(body.reports);
    recordReports(body.reports, outcomes, startTime);
    return { outcomes };
  }

  @Route(API.completeRun)
  complete(@Input() { params, body }: EndpointInput<typeof API.completeRun>): Promise<RevisionResponse> {
    return this.workerReports.complete(params.id, body);
  }

  /** Fails the run, or with `retryDelayMs` schedules its next attempt (workflow-level retry). */
  @Route(API.failRun)
  fail(@Input() { params, body }: EndpointInput<typeof API.failRun>): Promise<RevisionResponse> {
    return this.workerReports.fail(params.id, body);
  }

  /** Suspends the run at a sleep, event or retry-wait step (or resolves the step at once). */
  @Route(API.suspendRun)
  suspend(@Input() { params, body }: EndpointInput<typeof API.suspendRun>): Promise<StepResponse> {
    return this.steps.suspend(params.id, body);
  }

  /** Starts a child run (in the parent's shard unless it names one); with `wait` the parent suspends until the child is terminal. */
  @Route(API.startChild)
  startChild(@Input() { params, body }: EndpointInput<typeof API.startChild>): Promise<StepResponse> {
    return this.steps.startChild(params.id, body);
  }

  /** Records a completion token (ctx.awaitExternal) at its step; the step holds the token the coordinator made. */
  @Route(API.createCompletionToken)
  createCompletionToken(@Input() { params, body }: EndpointInput<typeof API.createCompletionToken>): Promise<StoredTask> {
    return this.steps.createCompletionToken(params.id, body);
  }

  /** Waits for a group of branches at one step (`ctx.any`, `ctx.all`), or suspends the run until a branch finishes. */
  @Route(API.waitGroup)
  waitGroup(@Input() { params, body }: EndpointInput<typeof API.waitGroup>): Promise<GroupResponse> {
    return this.steps.waitGroup(params.id, body);
  }

  /** Gives the run back (worker shutting down) so another worker takes it at once. */
  @Route(API.releaseRun)
  release(@Input() { params, body }: EndpointInput<typeof API.releaseRun>): Promise<RevisionResponse> {
    return this.claims.release(params.id, body.expectedRevision);
  }
}

/** Whether the caller went away before the response was written (what is taken for it then goes back). */
function disconnected(response: ServerResponse): () => boolean {
  let gone = false;
  response.once('close', () => (gone = !response.writableFinished));
  return () => gone;
}
