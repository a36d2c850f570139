import { Inject, Logger, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { DashboardController } from './dashboard.controller';
import { findBuiltDashboard, serveDashboard } from './dashboard-files';

/** The dashboard's mount point; its pages need no token, the API calls they make do. */
export const DASHBOARD_PATH = '/ui';

/**
 * The web dashboard: its static build at /ui (whose wildcard routes leave /ui/config.json to the controller)
 * and its settings.
 */
@Module({ controllers: [DashboardController] })
export class DashboardModule implements OnModuleInit {
  constructor(
    private readonly adapter: HttpAdapterHost,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  onModuleInit(): void {
    const dir = this.config.dashboardDir ?? findBuiltDashboard();
    if (!dir) new Logger('Dashboard').warn('the dashboard has not been built (npm run build): /ui answers 404');
    serveDashboard(this.adapter.httpAdapter.getInstance(), DASHBOARD_PATH, dir);
  }
}
