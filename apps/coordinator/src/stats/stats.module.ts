import { Module } from '@nestjs/common';
import { WorkersModule } from '../workers/workers.module';
import { StatsController } from './stats.controller';
import { StatsService } from './stats.service';

/** GET /v1/stats. */
@Module({
  imports: [WorkersModule],
  controllers: [StatsController],
  providers: [StatsService],
})
export class StatsModule {}
