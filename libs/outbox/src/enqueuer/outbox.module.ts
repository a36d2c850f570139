import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OutboxHealth } from './outbox.health';
import { OutboxEnqueuer } from './outbox-enqueuer.service';
import { DEFAULT_OUTBOX_OPTIONS, OUTBOX_OPTIONS, type OutboxOptions } from './outbox.constants';
import { OutboxRepository } from './outbox.repository';

/** Injection token of the options as given to `forRoot` or made by `forRootAsync`'s factory (OUTBOX_OPTIONS: with the defaults). */
export const OUTBOX_MODULE_OPTIONS = Symbol('OUTBOX_MODULE_OPTIONS');

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<Partial<OutboxOptions>>({
  moduleName: 'Outbox',
  optionsInjectionToken: OUTBOX_MODULE_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({
    ...definition,
    global: true,
    imports: [...(definition.imports ?? []), TerminusModule],
    providers: [
      ...(definition.providers ?? []),
      { provide: OUTBOX_OPTIONS, useFactory: (given: Partial<OutboxOptions>) => ({ ...DEFAULT_OUTBOX_OPTIONS, ...given }), inject: [OUTBOX_MODULE_OPTIONS] },
      OutboxRepository,
      OutboxEnqueuer,
      OutboxHealth,
    ],
    exports: [OutboxEnqueuer, OutboxRepository, OutboxHealth],
  }))
  .build();

/**
 * The outbox enqueuer: `forRoot(options)` (each one left out takes its DEFAULT_OUTBOX_OPTIONS value) or
 * `forRootAsync(...)`. Needs PersistenceModule, NotificationsModule (listening on OUTBOX_CHANNEL) and
 * PublisherModule (a PUBLISHER) in the importing app.
 */
@Module({})
export class OutboxModule extends ConfigurableModuleClass {}
