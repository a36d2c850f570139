import { Global, Module } from '@nestjs/common';
import { MetricsService } from './metrics.service';

/** The coordinator's metrics registry, served at /metrics by its own controller (the worker's: WorkerOperationsModule). */
@Global()
@Module({ providers: [MetricsService], exports: [MetricsService] })
export class MetricsModule {}
