import { MetricsService } from '@app/metrics';
import { API } from '@nest-durable/client';
import { Controller, Header, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Route } from '../http/route.decorators';

/** Prometheus text format, unauthenticated (like health). */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Route(API.metrics)
  @Header('cache-control', 'no-store')
  async scrape(@Res() response: Response): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    response.type(contentType).send(body);
  }
}
