import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';

@Module({
  imports: [RunStoreModule],
  controllers: [DeadLettersController],
  providers: [DeadLettersService],
  exports: [DeadLettersService],
})
export class DeadLettersModule {}
