import { Module } from '@nestjs/common';
import { DueTimesRepository } from './due-times.repository';
import { DueTimers } from './due-timers.service';

/** The coordinator's due timers (see DueTimers). Needs the persistence and notifications modules. */
@Module({
  providers: [DueTimers, DueTimesRepository],
  exports: [DueTimers],
})
export class TimersModule {}
