import { EnvReader, type LogLevelName, readLogging, readRedis, readTracing, type TracingSettings } from '@app/config';
import { parseBuildId, parseIdentifier } from '@nest-durable/common';
import { WORKER_DEFAULTS } from '@nest-durable/worker';
import { DEFAULT_REDIS_SUBSCRIBER_OPTIONS } from '@nest-durable/worker/redis';
import { hostname } from 'node:os';

export const SUBSCRIBERS = ['http', 'redis-zset', 'redis-streams'] as const;

export interface WorkerConfig {
  /** One coordinator, or several of one deployment (requests spread over those answering). */
  coordinatorUrls: string[];
  workerId: string;
  /** Recorded on the runs it executes; undefined: the worker module's default (the app's package.json version). */
  buildId?: string;
  concurrency: number;
  heartbeatIntervalMs: number;
  claimWaitMs: number;
  registrationIntervalMs: number;
  shutdownGraceMs: number;
  shards: string[];
  /** How this worker finds work: the claim API (default), or the Redis transport the coordinator publishes to. */
  subscriber: (typeof SUBSCRIBERS)[number];
  redisUrl: string;
  /** A Redis Cluster's seed nodes (REDIS_CLUSTER_NODES), used instead of redisUrl when not empty. */
  redisClusterNodes: { host: string; port: number }[];
  redisPrefix: string;
  redisBlockMs: number;
  /** Streams: partitions per queue when the coordinator has not published its count. */
  streamPartitions: number;
  /** Streams: a message pending this long on a silent worker is claimed by another one. */
  reclaimIdleMs: number;
  maxDeliveries: number;
  /** Sent as `Authorization: Bearer` to the coordinator's worker API. */
  workerToken?: string;
  /** Health and metrics are served here (0: a random free port), on this address. */
  port: number;
  host: string;
  logLevel: LogLevelName;
  logFormat: 'json' | 'pretty';
  /** OpenTelemetry traces (the OTEL_* variables): off unless an exporter or endpoint is set. */
  tracing: TracingSettings;
}

/** Parses and validates the worker's environment once, at start. */
export function loadWorkerConfig(env: Record<string, string | undefined>): WorkerConfig {
  const read = new EnvReader(env);
  return {
    coordinatorUrls: read.urls('COORDINATOR_URL', ['http', 'https'], 'http://127.0.0.1:3000'),
    workerId: read.string('WORKER_ID', `${hostname()}-${process.pid}`),
    buildId: read.optional('WORKER_BUILD_ID', parseBuildId),
    concurrency: read.integer('WORKER_CONCURRENCY', WORKER_DEFAULTS.concurrency, 1, 10_000),
    heartbeatIntervalMs: read.integer('HEARTBEAT_INTERVAL_MS', WORKER_DEFAULTS.heartbeatIntervalMs, 50, 86_400_000),
    claimWaitMs: read.integer('CLAIM_WAIT_MS', WORKER_DEFAULTS.claimWaitMs, 0, 60_000),
    registrationIntervalMs: read.integer('WORKER_REGISTRATION_INTERVAL_MS', WORKER_DEFAULTS.registrationIntervalMs, 100, 3_600_000),
    shutdownGraceMs: read.integer('SHUTDOWN_GRACE_MS', WORKER_DEFAULTS.shutdownGraceMs, 0, 3_600_000),
    shards: read.listOf('WORKER_SHARDS', (shard) => parseIdentifier(shard, 'shard')),
    subscriber: read.oneOf('SUBSCRIBER', SUBSCRIBERS, 'http'),
    ...readRedis(read),
    redisBlockMs: read.integer('REDIS_BLOCK_MS', DEFAULT_REDIS_SUBSCRIBER_OPTIONS.blockMs, 100, 60_000),
    reclaimIdleMs: read.integer('STREAM_RECLAIM_IDLE_MS', DEFAULT_REDIS_SUBSCRIBER_OPTIONS.reclaimIdleMs, 100, 86_400_000),
    maxDeliveries: read.integer('MAX_DELIVERIES', DEFAULT_REDIS_SUBSCRIBER_OPTIONS.maxDeliveries, 1, 1_000),
    workerToken: read.optionalString('WORKER_TOKEN'),
    port: read.integer('WORKER_PORT', 3001, 0, 65535),
    host: read.host('WORKER_HOST', '0.0.0.0'),
    ...readLogging(read),
    tracing: readTracing(read, 'nest-durable-worker'),
  };
}
