import { Module } from '@nestjs/common';
import { WorkersModule } from '../workers/workers.module';
import { StatsController } from './stats.controller';
import { StatsRepository } from './stats.repository';
import { StatsService } from './stats.service';

/** GET /v1/stats. */
@Module({
  imports: [WorkersModule],
  controllers: [StatsController],
  providers: [StatsRepository, StatsService],
})
export class StatsModule {}
