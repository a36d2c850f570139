import { LockingModule } from '@app/locking';
import { Module } from '@nestjs/common';
import { ClaimsService } from './claims.service';
import { WorkerApiController } from './worker-api.controller';

@Module({
  imports: [LockingModule],
  controllers: [WorkerApiController],
  providers: [ClaimsService],
})
export class WorkerApiModule {}
