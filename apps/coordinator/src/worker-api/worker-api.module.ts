import { LockingModule } from '@app/locking';
import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { ClaimsService } from './claims.service';
import { WorkerApiController } from './worker-api.controller';
import { WorkerWritesService } from './worker-writes.service';

@Module({
  imports: [LockingModule, DeadLettersModule],
  controllers: [WorkerApiController],
  providers: [ClaimsService, WorkerWritesService],
})
export class WorkerApiModule {}
