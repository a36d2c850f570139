import { Module } from '@nestjs/common';
import { WorkflowControlsRepository } from './workflow-controls.repository';
import { WorkflowsController } from './workflows.controller';
import { WorkflowsService } from './workflows.service';

@Module({
  controllers: [WorkflowsController],
  providers: [WorkflowControlsRepository, WorkflowsService],
  exports: [WorkflowsService, WorkflowControlsRepository],
})
export class WorkflowsModule {}
