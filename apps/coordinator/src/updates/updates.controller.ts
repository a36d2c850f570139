import { API, type EndpointInput, type UpdateFailedBody, type UpdateView } from '@nest-durable/common';
import { Controller, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { errorBody } from '../http/engine-exception.filter';
import { Input, Route } from '../http/route.decorators';
import { UpdatesService } from './updates.service';

/** Updates: a client sends one to a run and gets the run's answer; the run's worker records the answers. */
@Controller()
export class UpdatesController {
  constructor(private readonly updates: UpdatesService) {}

  /** 200 with the answer; 202 while pending after waitMs; 422 when the handler threw (the update carries its error); 409 `update_refused` when the run ended first. */
  @Route(API.sendUpdate)
  async send(
    @Input() { params, body }: EndpointInput<typeof API.sendUpdate>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<UpdateView | UpdateFailedBody> {
    const update = await this.updates.send(params.id, params.name, body.input, body.waitMs);
    if (update.status === 'pending') reply.status(202);
    if (update.status !== 'failed') return update;
    reply.status(422);
    const message = `update ${update.name} failed: ${update.error?.name ?? 'Error'}: ${update.error?.message ?? ''}`;
    return { ...errorBody(422, 'update_failed', message), reason: 'update_failed', update };
  }

  @Route(API.getUpdate)
  get(@Input() { params, query }: EndpointInput<typeof API.getUpdate>): Promise<UpdateView> {
    return this.updates.get(params.id, params.name, params.updateId, query.waitMs);
  }

  /** The worker holding the run records the answers to the updates it applied at a wait. */
  @Route(API.recordUpdates)
  record(@Input() { params, body }: EndpointInput<typeof API.recordUpdates>): Promise<void> {
    return this.updates.record(params.id, body);
  }
}
