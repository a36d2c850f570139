import { API, type DashboardConfig } from '@nest-durable/common';
import { Controller, Inject } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { Route } from '../http/route.decorators';

/** Read by the dashboard before anything else, without a token: whether to ask for one, and where traces are seen. */
@Controller()
export class DashboardController {
  constructor(@Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig) {}

  @Route(API.dashboardConfig)
  settings(): DashboardConfig {
    return { authRequired: !this.config.authDisabled, traceUrlTemplate: this.config.traceUrlTemplate ?? null };
  }
}
