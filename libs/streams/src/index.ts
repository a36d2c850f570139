export * from './dispatch-message';
export * from './dispatch.module';
export * from './publisher.interface';
export * from './publishers/redis-sorted-set.publisher';
export * from './publishers/redis-streams.publisher';
export * from './queue-naming';
export * from './redis/redis.connection';
export * from './redis/redis.module';
