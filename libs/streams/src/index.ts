// The stream layer of the dispatch design, shared by both sides: Redis key naming and partition layout, the
// Redis connection and its health, the coordinator's publishers, and the workers' consumers (the Consumer
// contract, and its Streams and sorted-set implementations).
export * from './connection/redis.connection';
export * from './health';
export * from './connection/redis.module';
export * from './consuming/consumer.interface';
export * from './consuming/consumer.options';
export * from './consuming/partition-readers';
export * from './consuming/sorted-set.consumer';
export * from './consuming/stream-entries';
export * from './consuming/stream-layout';
export * from './consuming/streams.consumer';
export * from './naming/hash-slot';
export * from './naming/stream-keys';
export * from './publishing/dispatch-message';
export * from './publishing/publisher.interface';
export * from './publishing/publisher.module';
export * from './publishing/redis-sorted-set.publisher';
export * from './publishing/redis-streams.publisher';
