import { RunStoreModule } from '@app/run-store';
import { Module } from '@nestjs/common';
import { CompletionsController } from './completions.controller';

@Module({ imports: [RunStoreModule], controllers: [CompletionsController] })
export class CompletionsModule {}
