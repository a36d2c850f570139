import { API, type DeadLetterPage, type EndpointInput, type RedriveResult } from '@nest-durable/common';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';
import { DeadLettersService } from './dead-letters.service';

/** The client API over dead letters: list, redrive, delete. */
@Controller()
export class DeadLettersController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Route(API.listDeadLetters)
  list(@Input() { query }: EndpointInput<typeof API.listDeadLetters>): Promise<DeadLetterPage> {
    return this.deadLetters.list(query);
  }

  /** Puts its run back in motion (a new attempt, or a new wake-up) and removes the dead letter. */
  @Route(API.redriveDeadLetter)
  redrive(@Input() { params }: EndpointInput<typeof API.redriveDeadLetter>): Promise<RedriveResult> {
    return this.deadLetters.redrive(params.id);
  }

  @Route(API.deleteDeadLetter)
  async delete(@Input() { params }: EndpointInput<typeof API.deleteDeadLetter>): Promise<void> {
    await this.deadLetters.delete(params.id);
  }
}
