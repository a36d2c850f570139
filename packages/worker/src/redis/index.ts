// The Redis subscribers, behind their own entry point (`@nest-durable/worker/redis`): only an app that uses
// them loads ioredis. The connection, its module and health indicator, the Consumer contract and the consumers
// are the stream layer's (libs/streams), shipped inside this package and re-exported here for the app that
// registers them. TransportSubscriber is transport-independent, but it is exported here too: its declarations
// name the Consumer contract, whose module's declarations need ioredis's types, which the main entry's must not.
export {
  type Consumer,
  DEFAULT_REDIS_SUBSCRIBER_OPTIONS,
  RedisConnection,
  type RedisConnectionOptions,
  RedisHealth,
  RedisModule,
  type Reclaimed,
  type RedisSubscriberOptions,
  SortedSetConsumer,
  type SortedSetWakeup,
  StreamsConsumer,
  type StreamWakeup,
  type Wakeup,
} from '@app/streams';
export * from '../subscribers/transport.subscriber';
export * from './redis-subscriber.provider';
