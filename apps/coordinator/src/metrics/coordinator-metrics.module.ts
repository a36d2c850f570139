import { MetricsModule } from '@app/metrics';
import { Global, Module } from '@nestjs/common';
import { CoordinatorMetrics } from './coordinator.metrics';
import { MetricsController } from './metrics.controller';

@Global()
@Module({
  imports: [MetricsModule],
  controllers: [MetricsController],
  providers: [CoordinatorMetrics],
  exports: [CoordinatorMetrics],
})
export class CoordinatorMetricsModule {}
