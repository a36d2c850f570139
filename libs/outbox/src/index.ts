export * from './notifications/notification-listener.health';
export * from './notifications/notification-listener.service';
export * from './notifications/notification.constants';
export * from './notifications/notifications.module';
