export * from './engine.errors';
export * from './workflow.errors';
