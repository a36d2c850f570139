// @nest-durable/common: what every other package and both apps share, and nothing else: the HTTP contract
// (schemas, endpoints, validation), the errors, queue naming, schedule times, the W3C trace context's format, a promise's deadline, and how a workflow is named to the client
// (a `@Workflow` class, a definition, a name and version). No Nest, no Redis, no PostgreSQL.
export * from './contract';
export * from './deadline';
export * from './errors';
export * from './queue-naming';
export * from './schedule-times';
export * from './trace-context';
export * from './workflow-target';
