import { API, type EndpointInput, type Stats } from '@nest-durable/common';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';
import { StatsService } from './stats.service';

@Controller()
export class StatsController {
  constructor(private readonly stats: StatsService) {}

  @Route(API.stats)
  get(@Input() { query }: EndpointInput<typeof API.stats>): Promise<Stats> {
    return this.stats.stats(query.window);
  }
}
