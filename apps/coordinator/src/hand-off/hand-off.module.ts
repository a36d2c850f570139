import { Module } from '@nestjs/common';
import { ResultWaits } from './result-waits.service';
import { WaitingClaims } from './waiting-claims.service';

/**
 * In-process hand-offs between the runs API and the worker API: starts hand runs to claims waiting on this
 * coordinator, finishes hand ended runs to the waits for their results.
 */
@Module({ providers: [WaitingClaims, ResultWaits], exports: [WaitingClaims, ResultWaits] })
export class HandOffModule {}
