import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { NOTIFICATION_LISTENER_OPTIONS, type NotificationListenerOptions } from './notification.constants';
import { NotificationListenerHealth } from './notification-listener.health';
import { NotificationListener } from './notification-listener.service';

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<NotificationListenerOptions>({
  moduleName: 'Notifications',
  optionsInjectionToken: NOTIFICATION_LISTENER_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({
    ...definition,
    // Global: the services of every module listen through the one LISTEN session.
    global: true,
    imports: [...(definition.imports ?? []), TerminusModule],
    providers: [...(definition.providers ?? []), NotificationListener, NotificationListenerHealth],
    exports: [NotificationListener, NotificationListenerHealth],
  }))
  .build();

/** The LISTEN session and its health: `forRoot({ url, applicationName, channels, probeIntervalMs })` or `forRootAsync(...)`. */
@Module({})
export class NotificationsModule extends ConfigurableModuleClass {}
