export * from './enqueuer/outbox-enqueuer.service';
export * from './enqueuer/outbox.constants';
export * from './enqueuer/outbox.module';
export * from './enqueuer/outbox.repository';
export * from './notifications/notification-listener.health';
export * from './notifications/notification-listener.service';
export * from './notifications/notification.constants';
export * from './notifications/notifications.module';
