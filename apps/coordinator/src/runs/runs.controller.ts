import { Audience } from '../auth/auth.decorators';
import { EventAccepted, parseIdentifier, parseListRunsQuery, parseSendEventRequest, parseStartRunsBatch, parseRunId, parseStartRunRequest, parseWaitMs, RUN_STATUSES, RunPage, RunView } from '@nest-durable/client';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { RunsService } from './runs.service';

/** The client API: start, inspect, wait for and cancel runs. */
@Audience('client')
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Post()
  async start(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Promise<RunView> {
    const { run, created } = await this.runs.start(parseStartRunRequest(body));
    response.status(created ? 201 : 200);
    return run;
  }

  /** Starts up to 1,000 runs in one transaction; runs whose idempotency key exists come back as they are. */
  @Post('batch')
  async startBatch(@Body() body: unknown): Promise<{ runs: RunView[] }> {
    const started = await this.runs.startMany(parseStartRunsBatch(body));
    return { runs: started.map((entry) => entry.run) };
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

  /** Cancels the run and its unfinished child runs; 409 if it is already terminal. */
  @Post(':id/cancel')
  @HttpCode(200)
  cancel(@Param('id') id: string): Promise<RunView> {
    return this.runs.cancel(parseRunId(id));
  }

  /** Delivers an event to a run waiting for it, or keeps it for its next wait of that name. */
  @Post(':id/events/:name')
  @HttpCode(202)
  sendEvent(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown): Promise<EventAccepted> {
    const { data } = parseSendEventRequest(body);
    return this.runs.sendEvent(parseRunId(id), parseIdentifier(name, 'event_name'), data);
  }

  /** Ends a durable sleep now. */
  @Post(':id/wake')
  @HttpCode(200)
  wake(@Param('id') id: string): Promise<RunView> {
    return this.runs.wake(parseRunId(id));
  }

  /** Runs a failed run again as its next attempt, resuming from its completed steps. */
  @Post(':id/retry')
  @HttpCode(200)
  retry(@Param('id') id: string): Promise<RunView> {
    return this.runs.retry(parseRunId(id));
  }
}
