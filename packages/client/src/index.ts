// The contract's types and errors come from @nest-durable/common; re-exported so a service needs one import.
export * from '@nest-durable/common';
export * from './json-http.client';
export * from './workflow.client';
export * from './workflow.client.types';
export * from './run-histories';
export type { WatchEvent, WatchOptions } from './run-watch';
export { UpdatePendingError, type UpdateOptions } from './updates';
