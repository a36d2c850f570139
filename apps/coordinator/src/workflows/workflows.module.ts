import { Database, findInputSchemas } from '@app/persistence';
import { Module } from '@nestjs/common';
import { InputSchemas } from './input-schemas.service';
import { WorkflowsController } from './workflows.controller';
import { WorkflowsService } from './workflows.service';

@Module({
  controllers: [WorkflowsController],
  providers: [
    WorkflowsService,
    // Built here (not injected by class): its unit spec gives it a read and a clock of its own.
    { provide: InputSchemas, useFactory: (db: Database) => new InputSchemas((versions) => findInputSchemas(db, versions)), inject: [Database] },
  ],
  exports: [WorkflowsService, InputSchemas],
})
export class WorkflowsModule {}
