import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { HandOffModule } from '../hand-off/hand-off.module';
import { TimersModule } from '../timers/timers.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { DeclaredSchedules } from './declared-schedules.service';
import { ScheduleFiring } from './schedule-firing.service';
import { SchedulesController } from './schedules.controller';
import { SchedulesService } from './schedules.service';

/** Schedules (see SchedulesService); fired at their times by the due timers. */
@Module({
  imports: [RunStoreModule, TimersModule, HandOffModule, WorkflowsModule],
  controllers: [SchedulesController],
  providers: [SchedulesService, ScheduleFiring, DeclaredSchedules],
  exports: [DeclaredSchedules],
})
export class SchedulesModule {}
