export * from './dead-letter.contracts';
export * from './errors';
export * from './run-status';
export * from './run.contracts';
export * from './validation';
export * from './worker.contracts';
export * from './hash-slot';
export * from './queue-naming';
