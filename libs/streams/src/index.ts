export * from './dispatch-message';
export * from './publisher.interface';
export * from './publisher.module';
export * from './publishers/redis-sorted-set.publisher';
export * from './publishers/redis-streams.publisher';
