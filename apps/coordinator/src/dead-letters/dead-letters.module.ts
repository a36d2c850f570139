import { LockingModule } from '@app/locking';
import { DeadLetterRepository } from '@app/outbox';
import { Module } from '@nestjs/common';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';

@Module({
  imports: [LockingModule],
  controllers: [DeadLettersController],
  providers: [DeadLetterRepository, DeadLettersService],
  exports: [DeadLettersService],
})
export class DeadLettersModule {}
