import { API, type EndpointInput } from '@nest-durable/client';
import { Controller, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Input, Route } from '../http/route.decorators';
import { FeedService } from './feed.service';

@Controller()
export class FeedController {
  constructor(private readonly feed: FeedService) {}

  /** Server-sent events, open until the client disconnects or the coordinator shuts down. */
  @Route(API.feed)
  follow(@Input() { query }: EndpointInput<typeof API.feed>, @Res() response: Response): Promise<void> {
    return this.feed.follow(query, response);
  }
}
