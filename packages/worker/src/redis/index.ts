// The Redis subscribers, behind their own entry point (`@nest-durable/worker/redis`): only an app that uses
// them loads ioredis. The connection, its module and health indicator are the stream layer's (libs/streams),
// shipped inside this package and re-exported here for the app that registers them.
export {
  DEFAULT_REDIS_SUBSCRIBER_OPTIONS,
  RedisConnection,
  type RedisConnectionOptions,
  RedisHealth,
  RedisModule,
  type RedisSubscriberOptions,
} from '@app/streams';
export * from './redis-sorted-set.subscriber';
export * from './redis-streams.subscriber';
export * from './redis-subscriber.provider';
