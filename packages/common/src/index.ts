// @nest-durable/common: what every other package and both apps share, and nothing else: the HTTP contract
// (schemas, endpoints, validation), the errors, queue naming and schedule times. No Nest, no Redis, no PostgreSQL.
export * from './contract';
export * from './errors';
export * from './queue-naming';
export * from './schedule-times';
