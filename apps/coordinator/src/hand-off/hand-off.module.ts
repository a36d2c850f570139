import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { ResultWaits } from './result-waits.service';
import { RunLifecycle } from './run-lifecycle.service';
import { WaitingClaims } from './waiting-claims.service';

/**
 * What this coordinator does when runs start, come due or end (RunLifecycle), and the in-process hand-offs
 * it decides: starts hand runs to claims waiting here, finishes hand ended runs to the waits for their results.
 */
@Module({ imports: [RunStoreModule], providers: [WaitingClaims, ResultWaits, RunLifecycle], exports: [WaitingClaims, ResultWaits, RunLifecycle] })
export class HandOffModule {}
