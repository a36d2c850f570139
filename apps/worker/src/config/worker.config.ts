import { EnvReader } from '@app/config';
import { hostname } from 'node:os';

export interface WorkerConfig {
  coordinatorUrl: string;
  workerId: string;
  concurrency: number;
  heartbeatIntervalMs: number;
  claimWaitMs: number;
  shutdownGraceMs: number;
  shards: string[];
}

/** Parses and validates the worker's environment once, at start. */
export function loadWorkerConfig(env: Record<string, string | undefined>): WorkerConfig {
  const read = new EnvReader(env);
  return {
    coordinatorUrl: read.url('COORDINATOR_URL', ['http', 'https'], 'http://127.0.0.1:3000'),
    workerId: read.string('WORKER_ID', `${hostname()}-${process.pid}`),
    concurrency: read.integer('WORKER_CONCURRENCY', 10, 1, 10_000),
    heartbeatIntervalMs: read.integer('HEARTBEAT_INTERVAL_MS', 30_000, 50, 86_400_000),
    claimWaitMs: read.integer('CLAIM_WAIT_MS', 20_000, 0, 60_000),
    shutdownGraceMs: read.integer('SHUTDOWN_GRACE_MS', 10_000, 0, 3_600_000),
    shards: read.list('WORKER_SHARDS'),
  };
}
