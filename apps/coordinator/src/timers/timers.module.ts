import { Module } from '@nestjs/common';
import { HandOffModule } from '../hand-off/hand-off.module';
import { DueTimers } from './due-timers.service';

/** The coordinator's due timers (see DueTimers). Needs the persistence and notifications modules. */
@Module({
  imports: [HandOffModule],
  providers: [DueTimers],
  exports: [DueTimers],
})
export class TimersModule {}
