// The worker's health and metrics endpoints, behind their own entry point (`@nest-durable/worker/operations`):
// only an app that mounts them loads prom-client and its HTTP controllers. The indicators themselves
// (WorkerRuntimeHealth, CoordinatorHealth; RedisHealth under ./redis) are the main entry's and ./redis's.
export * from './worker-operations.module';
