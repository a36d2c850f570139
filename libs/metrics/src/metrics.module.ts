import { Global, Module } from '@nestjs/common';
import { MetricsService } from './metrics.service';

/** The app's metrics registry; each app serves it at /metrics with its own controller. */
@Global()
@Module({ providers: [MetricsService], exports: [MetricsService] })
export class MetricsModule {}
