import { MetricsService } from '@app/metrics';
import { Controller, Get, Header, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Audience } from '../auth/auth.decorators';

/** Prometheus text format, unauthenticated (like health). */
@Audience('public')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('cache-control', 'no-store')
  async scrape(@Res() response: Response): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    response.type(contentType).send(body);
  }
}
