import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { HandOffModule } from '../hand-off/hand-off.module';
import { ClaimsService } from './claims.service';
import { HeartbeatsService } from './heartbeats.service';
import { OffersService } from './offers.service';
import { ReportsService } from './reports.service';
import { StepsService } from './steps.service';
import { WorkerApiController } from './worker-api.controller';

@Module({
  imports: [RunStoreModule, DeadLettersModule, HandOffModule],
  controllers: [WorkerApiController],
  providers: [ClaimsService, OffersService, HeartbeatsService, ReportsService, StepsService],
})
export class WorkerApiModule {}
