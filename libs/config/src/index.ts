export * from './env-reader';
