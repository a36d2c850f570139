import {
  parseListRunsQuery,
  parseRunId,
  parseStartRunRequest,
  parseWaitMs,
  RUN_STATUSES,
  RunPage,
  RunView,
} from '@app/contracts';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { RunsService } from './runs.service';

/** The client API: start, inspect, wait for and cancel runs. */
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Post()
  async start(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Promise<RunView> {
    const { run, created } = await this.runs.start(parseStartRunRequest(body));
    response.status(created ? 201 : 200);
    return run;
  }

  @Get()
  list(@Query() query: Record<string, unknown>): Promise<RunPage> {
    return this.runs.list(parseListRunsQuery(query, RUN_STATUSES));
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<RunView> {
    return this.runs.get(parseRunId(id));
  }

  @Get(':id/result')
  result(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<RunView> {
    const runId = parseRunId(id);
    return this.runs.waitForResult(runId, parseWaitMs(query.waitMs));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  cancel(@Param('id') id: string): Promise<RunView> {
    return this.runs.cancel(parseRunId(id));
  }
}
