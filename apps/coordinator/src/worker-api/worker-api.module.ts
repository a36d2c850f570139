import { LockingModule } from '@app/locking';
import { Module } from '@nestjs/common';
import { ClaimsService } from './claims.service';
import { WorkerApiController } from './worker-api.controller';
import { WorkerWritesService } from './worker-writes.service';

@Module({
  imports: [LockingModule],
  controllers: [WorkerApiController],
  providers: [ClaimsService, WorkerWritesService],
})
export class WorkerApiModule {}
