import { API, type CompletionAccepted, type EndpointInput, InvalidRequestError } from '@nest-durable/common';
import { CompletionRepository } from '@app/run-store';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';

/**
 * Completion tokens' one route: an outside system (a payment provider, an approval page) completes or fails the
 * step a workflow made the token for. It takes no API token (the entry's audience is public): the unguessable
 * token is the credential, and it is good for one completion of one step.
 */
@Controller()
export class CompletionsController {
  constructor(private readonly completions: CompletionRepository) {}

  @Route(API.completeExternal)
  complete(@Input() { params, body }: EndpointInput<typeof API.completeExternal>): Promise<CompletionAccepted> {
    if (body.data !== undefined && body.error !== undefined) {
      throw new InvalidRequestError('invalid_completion', 'send data (to complete the step) or error (to fail it), not both');
    }
    return this.completions.complete(params.token, body);
  }
}
