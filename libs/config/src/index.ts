export * from './env-reader';
export * from './app-logger';
export * from './listen';
export * from './http-adapter';
export * from './jit-warm-up';
export * from './tracing';
