import { Inject, Logger, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { DashboardController } from './dashboard.controller';
import { dashboardFiles, findBuiltDashboard } from './dashboard-files';

/** The dashboard's mount point; its pages need no token, the API calls they make do. */
export const DASHBOARD_PATH = '/ui';

/**
 * The web dashboard: its static build at /ui (mounted on Express after the API's routes, so /ui/config.json
 * is the controller's) and its settings.
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
    this.adapter.httpAdapter.getInstance().use(DASHBOARD_PATH, dashboardFiles(dir));
  }
}
