import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { HandOffModule } from '../hand-off/hand-off.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { BulkRunsService } from './bulk-runs.service';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';

@Module({
  imports: [RunStoreModule, HandOffModule, WorkflowsModule],
  controllers: [RunsController],
  providers: [RunsRepository, RunsService, BulkRunsService],
})
export class RunsModule {}
