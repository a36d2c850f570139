import {
  ClaimResponse,
  HeartbeatResponse,
  parseClaimRequest,
  parseCompleteRunRequest,
  parseFailRunRequest,
  parseHeartbeatRequest,
  parseRunId,
  parseTaskResultRequest,
  TaskResultResponse,
} from '@app/contracts';
import { RunLeaseRepository } from '@app/locking';
import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ClaimsService } from './claims.service';

/**
 * The worker protocol. Every write after the claim carries `expectedRevision`; a stale one gets
 * 409 `revision_conflict` and changes nothing.
 */
@Controller('v1/worker')
export class WorkerApiController {
  constructor(
    private readonly claims: ClaimsService,
    private readonly leases: RunLeaseRepository,
  ) {}

  @Post('claims')
  @HttpCode(200)
  async claim(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Promise<ClaimResponse> {
    const request = parseClaimRequest(body);
    let gone = false;
    response.once('close', () => (gone = !response.writableFinished));
    return { runs: await this.claims.claim(request, () => gone) };
  }

  @Post('heartbeats')
  @HttpCode(200)
  async heartbeat(@Body() body: unknown): Promise<HeartbeatResponse> {
    return { lost: await this.leases.heartbeat(parseHeartbeatRequest(body).runs) };
  }

  @Post('runs/:id/tasks')
  @HttpCode(200)
  async recordTask(@Param('id') id: string, @Body() body: unknown): Promise<TaskResultResponse> {
    return { task: await this.leases.recordTask(parseRunId(id), parseTaskResultRequest(body)) };
  }

  @Post('runs/:id/complete')
  @HttpCode(200)
  complete(@Param('id') id: string, @Body() body: unknown): Promise<{ revision: number }> {
    const request = parseCompleteRunRequest(body);
    return this.leases.finish(parseRunId(id), request.expectedRevision, { status: 'completed', output: request.output });
  }

  @Post('runs/:id/fail')
  @HttpCode(200)
  fail(@Param('id') id: string, @Body() body: unknown): Promise<{ revision: number }> {
    const request = parseFailRunRequest(body);
    return this.leases.finish(parseRunId(id), request.expectedRevision, { status: 'failed', error: request.error });
  }
}
