export * from './queue-naming';
