import { Module } from '@nestjs/common';
import { DueTimers } from './due-timers.service';

/** The coordinator's due timers (see DueTimers). Needs the persistence and notifications modules. */
@Module({
  providers: [DueTimers],
  exports: [DueTimers],
})
export class TimersModule {}
