import { DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OutboxHealth } from './outbox.health';
import { OutboxEnqueuer } from './outbox-enqueuer.service';
import { DEFAULT_OUTBOX_OPTIONS, OUTBOX_OPTIONS, type OutboxOptions } from './outbox.constants';
import { OutboxRepository } from './outbox.repository';

/**
 * The outbox enqueuer. Needs PersistenceModule, NotificationsModule (listening on OUTBOX_CHANNEL)
 * and PublisherModule (a PUBLISHER) in the importing app.
 */
@Module({})
export class OutboxModule {
  static forRoot(options: Partial<OutboxOptions> = {}): DynamicModule {
    return {
      module: OutboxModule,
      global: true,
      imports: [TerminusModule],
      providers: [{ provide: OUTBOX_OPTIONS, useValue: { ...DEFAULT_OUTBOX_OPTIONS, ...options } }, OutboxRepository, OutboxEnqueuer, OutboxHealth],
      exports: [OutboxEnqueuer, OutboxRepository, OutboxHealth],
    };
  }
}
