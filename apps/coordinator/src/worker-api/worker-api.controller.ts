import { Audience } from '../auth/auth.decorators';
import { ClaimResponse, ReportsResponse, HeartbeatResponse, parseClaimRequest, parseCompleteRunRequest, parseFailRunRequest, parseHeartbeatRequest, parseReleaseRunRequest, parseReportsRequest, parseRunId, parseStartChildRequest, parseStreamDeadLetterReport, parseSuspendRequest, parseTakeRunsRequest, parseTaskResultRequest, StreamDeadLetterResponse, TakeRunsResponse, StepResponse, TaskResultResponse, queueName } from '@nest-durable/client';
import { HeartbeatRepository, ReportRepository, StepRepository } from '@app/locking';
import { uuidv7 } from '@app/persistence';
import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DeadLettersService } from '../dead-letters/dead-letters.service';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { ClaimsService } from './claims.service';
import { WorkerWritesService } from './worker-writes.service';

/**
 * The worker protocol. Every write after the claim carries `expectedRevision`; a stale one gets
 * 409 `revision_conflict` and changes nothing.
 */
@Audience('worker')
@Controller('v1/worker')
export class WorkerApiController {
  constructor(
    private readonly claims: ClaimsService,
    private readonly heartbeats: HeartbeatRepository,
    private readonly reportRepository: ReportRepository,
    private readonly steps: StepRepository,
    private readonly metrics: CoordinatorMetrics,
    private readonly writes: WorkerWritesService,
    private readonly deadLetters: DeadLettersService,
  ) {}

  @Post('claims')
  @HttpCode(200)
  async claim(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Promise<ClaimResponse> {
    return { runs: await this.claims.claim(parseClaimRequest(body), disconnected(response)) };
  }

  /**
   * Takes runs for wake-ups a transport (Redis) delivered: up to one per wake-up of each queue, chosen
   * as a claim chooses them. Of the wake-ups that took nothing, those in `requeue` go back to the
   * transport (their queue still has runs waiting); the others are done with.
   */
  @Post('takes')
  @HttpCode(200)
  take(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Promise<TakeRunsResponse> {
    return this.claims.take(parseTakeRunsRequest(body), disconnected(response));
  }

  /** A Streams wake-up delivered more than MAX_DELIVERIES times: recorded, and its run failed if its claim went idle. */
  @Post('dead-letters')
  @HttpCode(200)
  recordDeadLetter(@Body() body: unknown): Promise<StreamDeadLetterResponse> {
    const report = parseStreamDeadLetterReport(body);
    const { name, version, shard } = report.workflow;
    return this.deadLetters.recordStreamDeadLetter({ ...report, queue: queueName(name, version, shard) });
  }

  @Post('heartbeats')
  @HttpCode(200)
  async heartbeat(@Body() body: unknown): Promise<HeartbeatResponse> {
    const { runs } = parseHeartbeatRequest(body);
    const lost = await this.heartbeats.refresh(runs);
    this.metrics.heartbeats.inc(runs.length - lost.length);
    return { lost };
  }

  @Post('runs/:id/tasks')
  @HttpCode(200)
  async recordTask(@Param('id') id: string, @Body() body: unknown): Promise<TaskResultResponse> {
    return { task: await this.writes.recordTask(parseRunId(id), parseTaskResultRequest(body)) };
  }

  /** Task results, completions and failures of several runs in one request and one transaction. */
  @Post('reports')
  @HttpCode(200)
  async reports(@Body() body: unknown): Promise<ReportsResponse> {
    return { outcomes: await this.writes.apply(parseReportsRequest(body)) };
  }

  @Post('runs/:id/complete')
  @HttpCode(200)
  complete(@Param('id') id: string, @Body() body: unknown): Promise<{ revision: number }> {
    return this.writes.complete(parseRunId(id), parseCompleteRunRequest(body));
  }

  /** Fails the run, or with `retryDelayMs` schedules its next attempt (workflow-level retry). */
  @Post('runs/:id/fail')
  @HttpCode(200)
  fail(@Param('id') id: string, @Body() body: unknown): Promise<{ revision: number }> {
    return this.writes.fail(parseRunId(id), parseFailRunRequest(body));
  }

  /** Suspends the run at a sleep, event or retry-wait step (or resolves the step at once). */
  @Post('runs/:id/suspend')
  @HttpCode(200)
  suspend(@Param('id') id: string, @Body() body: unknown): Promise<StepResponse> {
    return this.steps.suspend(parseRunId(id), parseSuspendRequest(body));
  }

  /** Starts a child run (in the parent's shard unless it names one); with `wait` the parent suspends until the child is terminal. */
  @Post('runs/:id/children')
  @HttpCode(200)
  startChild(@Param('id') id: string, @Body() body: unknown): Promise<StepResponse> {
    return this.steps.startChild(parseRunId(id), parseStartChildRequest(body), uuidv7());
  }

  /** Gives the run back (worker shutting down) so another worker takes it at once. */
  @Post('runs/:id/release')
  @HttpCode(200)
  release(@Param('id') id: string, @Body() body: unknown): Promise<{ revision: number }> {
    return this.reportRepository.release(parseRunId(id), parseReleaseRunRequest(body).expectedRevision);
  }
}

/** Whether the caller went away before the response was written (what is taken for it then goes back). */
function disconnected(response: Response): () => boolean {
  let gone = false;
  response.once('close', () => (gone = !response.writableFinished));
  return () => gone;
}
