import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module';
import { RetentionModule } from '../retention/retention.module';
import { SchedulesModule } from '../schedules/schedules.module';
import { WorkersController } from './workers.controller';
import { WorkersService } from './workers.service';

@Module({
  imports: [WorkflowsModule, RetentionModule, SchedulesModule],
  controllers: [WorkersController],
  providers: [WorkersService],
  exports: [WorkersService],
})
export class WorkersModule {}
