import { Module } from '@nestjs/common';
import { HandOffModule } from '../hand-off/hand-off.module';
import { DueTimesRepository } from './due-times.repository';
import { DueTimers } from './due-timers.service';

/** The coordinator's due timers (see DueTimers). Needs the persistence and notifications modules. */
@Module({
  imports: [HandOffModule],
  providers: [DueTimers, DueTimesRepository],
  exports: [DueTimers],
})
export class TimersModule {}
