import { RunStoreModule } from '@app/run-store';
import { DeadLetterRepository } from './dead-letter.repository';
import { Module } from '@nestjs/common';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';

@Module({
  imports: [RunStoreModule],
  controllers: [DeadLettersController],
  providers: [DeadLetterRepository, DeadLettersService],
  exports: [DeadLettersService],
})
export class DeadLettersModule {}
