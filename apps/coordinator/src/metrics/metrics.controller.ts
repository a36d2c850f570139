import { MetricsService } from '@app/metrics';
import { API } from '@nest-durable/common';
import { Controller, Header, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Route } from '../http/route.decorators';

/** Prometheus text format, unauthenticated (like health). */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Route(API.metrics)
  @Header('cache-control', 'no-store')
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    reply.type(contentType).send(body);
  }
}
