import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { HandOffModule } from '../hand-off/hand-off.module';
import { ClaimsService } from './claims.service';
import { OffersService } from './offers.service';
import { WorkerApiController } from './worker-api.controller';
import { WorkerWritesService } from './worker-writes.service';

@Module({
  imports: [RunStoreModule, DeadLettersModule, HandOffModule],
  controllers: [WorkerApiController],
  providers: [ClaimsService, OffersService, WorkerWritesService],
})
export class WorkerApiModule {}
