import { LockingModule } from '@app/locking';
import { Module } from '@nestjs/common';
import { TimersModule } from '../timers/timers.module';
import { ScheduleFiring } from './schedule-firing.service';
import { SchedulesController } from './schedules.controller';
import { SchedulesRepository } from './schedules.repository';
import { SchedulesService } from './schedules.service';

/** Schedules (see SchedulesService); fired at their times by the due timers. */
@Module({
  imports: [LockingModule, TimersModule],
  controllers: [SchedulesController],
  providers: [SchedulesRepository, SchedulesService, ScheduleFiring],
  exports: [SchedulesService],
})
export class SchedulesModule {}
