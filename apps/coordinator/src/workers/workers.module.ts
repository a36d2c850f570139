import { Module } from '@nestjs/common';
import { SchedulesModule } from '../schedules/schedules.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { WorkersController } from './workers.controller';
import { WorkersService } from './workers.service';

@Module({
  imports: [SchedulesModule, WorkflowsModule],
  controllers: [WorkersController],
  providers: [WorkersService],
  exports: [WorkersService],
})
export class WorkersModule {}
