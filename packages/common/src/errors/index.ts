export * from './completion.errors';
export * from './durable.error';
export * from './engine.errors';
export * from './error-registry';
export * from './workflow.errors';
export * from './update.errors';
