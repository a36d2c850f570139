import { Module } from '@nestjs/common';
import { WaitingClaims } from './waiting-claims.service';

/** Starts handing runs to claims waiting on this coordinator: shared by the runs API and the worker API. */
@Module({ providers: [WaitingClaims], exports: [WaitingClaims] })
export class HandOffModule {}
