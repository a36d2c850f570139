// The Redis subscribers, behind their own entry point (`@nest-durable/worker/redis`): only an app that
// uses them loads ioredis.
export * from './redis-sorted-set.subscriber';
export * from './redis-streams.subscriber';
export * from './redis-subscriber.options';
export * from './redis-subscriber.provider';
export * from './redis.connection';
export * from './redis.health';
export * from './redis.module';
