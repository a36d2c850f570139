import { API, type EndpointInput } from '@nest-durable/common';
import { Controller, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Input, Route } from '../http/route.decorators';
import { FeedService } from './feed.service';

@Controller()
export class FeedController {
  constructor(private readonly feed: FeedService) {}

  /**
   * Server-sent events, open until the client disconnects or the coordinator shuts down. Written to the raw
   * response: Fastify leaves a reply alone once its headers are sent, and answers a failure before that.
   */
  @Route(API.feed)
  follow(@Input() { query }: EndpointInput<typeof API.feed>, @Res() reply: FastifyReply): Promise<void> {
    return this.feed.follow(query, reply.raw);
  }
}
