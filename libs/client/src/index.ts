export * from './contract';
export * from './json-http.client';
export * from './workflow.client';
