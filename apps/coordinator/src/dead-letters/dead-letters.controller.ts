import { type DeadLetterPage, parseDeadLetterId, parseListDeadLettersQuery, type RedriveResult } from '@nest-durable/client';
import { Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Audience } from '../auth/auth.decorators';
import { DeadLettersService } from './dead-letters.service';

/** The client API over dead letters: list, redrive, delete. */
@Audience('client')
@Controller('v1/dead-letters')
export class DeadLettersController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Get()
  list(@Query() query: Record<string, unknown>): Promise<DeadLetterPage> {
    return this.deadLetters.list(parseListDeadLettersQuery(query));
  }

  /** Puts its run back in motion (a new attempt, or a new wake-up) and removes the dead letter. */
  @Post(':id/redrive')
  @HttpCode(200)
  redrive(@Param('id') id: string): Promise<RedriveResult> {
    return this.deadLetters.redrive(parseDeadLetterId(id));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(@Param('id') id: string): Promise<void> {
    await this.deadLetters.delete(parseDeadLetterId(id));
  }
}
