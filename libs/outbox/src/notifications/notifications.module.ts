import { DynamicModule, type FactoryProvider, Module, type ModuleMetadata } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { NOTIFICATION_LISTENER_OPTIONS, type NotificationListenerOptions } from './notification.constants';
import { NotificationListenerHealth } from './notification-listener.health';
import { NotificationListener } from './notification-listener.service';

export interface NotificationsAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // biome-ignore lint/suspicious/noExplicitAny: the factory takes whatever `inject` names, as Nest's own FactoryProvider does
  useFactory: (...args: any[]) => NotificationListenerOptions | Promise<NotificationListenerOptions>;
  inject?: FactoryProvider['inject'];
}

@Module({})
export class NotificationsModule {
  static forRootAsync(options: NotificationsAsyncOptions): DynamicModule {
    return {
      module: NotificationsModule,
      global: true,
      imports: [...(options.imports ?? []), TerminusModule],
      providers: [
        { provide: NOTIFICATION_LISTENER_OPTIONS, useFactory: options.useFactory, inject: options.inject },
        NotificationListener,
        NotificationListenerHealth,
      ],
      exports: [NotificationListener, NotificationListenerHealth],
    };
  }
}
