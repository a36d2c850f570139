import { ConfigError, EnvReader, type LogLevelName, readLogging, readRedis, readTracing, redact, type TracingSettings } from '@app/config';
import { LEASE_DEFAULTS } from '@app/locking';
import { type DatabaseTarget, parseDatabaseUrl } from '@app/persistence';
import { DISPATCH_MODES, type DispatchMode } from '@app/streams';
import { RETENTION_MAX_MS } from '@nest-durable/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

export const COORDINATOR_CONFIG = Symbol('COORDINATOR_CONFIG');

export interface CoordinatorConfig {
  port: number;
  host: string;
  /** DATABASE_URL, parsed once here: one server, or a primary and its standbys as libpq takes them (`postgres://a:5432,b:5432/db`); see PrimaryLocator. */
  database: DatabaseTarget;
  databasePoolSize: number;
  /** Sessions of the pool that runs claims, takes, starts, task results and report batches with generic plans (see GenericPlanPool), beside the main pool's. */
  databaseClaimPoolSize: number;
  /** A running run whose claim has been idle this long is handed to the next claimer. */
  claimMinIdleTimeMs: number;
  /** A run whose claim went idle after this many takeovers fails (`stalled`) instead of being taken over again. */
  maxStalls: number;
  /** The heartbeat interval workers are configured with; must be well below the idle time. */
  heartbeatIntervalMs: number;
  /**
   * While a claim long-polls, the database is re-checked this often: how claims that went idle are
   * found, and the safety net of the due timers.
   */
  claimPollIntervalMs: number;
  /** The due timers hold the due times this far ahead (reloading every half of it)... */
  timerHorizonMs: number;
  /** ...and at most this many, so memory stays bounded. */
  timerMaxEntries: number;
  /** A schedule with catchUp `none` skips a fire time it would act on later than this (a missed one). */
  scheduleMisfireGraceMs: number;
  listenerProbeIntervalMs: number;
  bodyLimitBytes: number;
  /** Where ready runs are published: nowhere (workers use the claim API), a Redis sorted set, or Redis Streams. */
  dispatch: DispatchMode;
  redisUrl: string;
  /** A Redis Cluster's seed nodes (REDIS_CLUSTER_NODES), used instead of redisUrl when not empty. */
  redisClusterNodes: { host: string; port: number }[];
  redisPrefix: string;
  streamPartitions: number;
  outboxPollIntervalMs: number;
  outboxBatchSize: number;
  outboxMaxRetries: number;
  /** A failed publish is retried after a random wait below base * 2^(attempt-1), capped. */
  outboxRetryBaseMs: number;
  outboxRetryMaxMs: number;
  /**
   * An in_flight outbox row older than this was left by an enqueuer that died mid-batch: it is
   * published again (and sent rows older than this are deleted). Must exceed the longest batch publish.
   */
  outboxStaleInFlightMs: number;
  /** The republish daemon's period, and how long a due run may go undelivered before it is published again. */
  republishIntervalMs: number;
  republishAfterMs: number;
  leaderCheckIntervalMs: number;
  /** Finished runs (and sent outbox rows, dead letters) are deleted this long after they ended; 0 keeps them. */
  runRetentionMs: number;
  /** Retention windows of particular workflows (all their versions), by name; 0 keeps theirs. */
  runRetentionOverrides: Record<string, number>;
  /** How often the retention daemon looks for what to delete, and how many rows one of its statements deletes at most. */
  retentionIntervalMs: number;
  retentionBatchSize: number;
  /** The share of its time (%) a sweep spends in its batches: after each it pauses so the share holds. */
  retentionBusyPercent: number;
  /** Bearer tokens of the client API and the worker API (undefined only when auth is disabled). */
  clientToken?: string;
  workerToken?: string;
  authDisabled: boolean;
  /** The built web dashboard served at /ui (DASHBOARD_DIR); undefined: the build's own `dist/dashboard`. */
  dashboardDir?: string;
  /** TRACE_URL_TEMPLATE: a trace viewer's address with `{traceId}` in it, which the dashboard links a run's trace id to. */
  traceUrlTemplate?: string;
  logLevel: LogLevelName;
  logFormat: 'json' | 'pretty';
  /** Readiness reports `degraded` when the oldest due outbox row waited longer, or dead letters exceed this. */
  outboxBacklogDegradedSeconds: number;
  deadLettersDegraded: number;
  /** An open live feed (GET /v1/feed) gets a comment line this often, so proxies and clients see it is alive. */
  feedKeepAliveMs: number;
  /**
   * This coordinator process, as PostgreSQL sees it: the application_name of all its sessions, so
   * coordinators can tell whether others are connected (not read from the environment).
   */
  applicationName: string;
  /** OpenTelemetry traces (the OTEL_* variables): off unless an exporter or endpoint is set. */
  tracing: TracingSettings;
}

/** Every coordinator session's application_name starts with this. */
export const COORDINATOR_APPLICATION_NAME = 'wf-coordinator';

const DAY_MS = 86_400_000;

/** RUN_RETENTION_OVERRIDES: `workflow=ms,workflow=ms` (a workflow name, as runs are started with). */
function readRetentionOverrides(read: EnvReader): Record<string, number> {
  const overrides: Record<string, number> = {};
  for (const item of read.list('RUN_RETENTION_OVERRIDES')) {
    const match = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})=(\d+)$/.exec(item);
    if (!match || Number(match[2]) > RETENTION_MAX_MS || Object.hasOwn(overrides, match[1])) {
      throw new ConfigError(
        `RUN_RETENTION_OVERRIDES must be comma-separated workflow=milliseconds pairs (0 to ${RETENTION_MAX_MS}, each workflow once), got "${item}"`,
      );
    }
    overrides[match[1]] = Number(match[2]);
  }
  return overrides;
}

/** DATABASE_URL: one server's URL, or several hosts (libpq's multi-host URI, with target_session_attrs). */
function readDatabaseUrl(read: EnvReader): DatabaseTarget {
  const value = read.string('DATABASE_URL');
  try {
    return parseDatabaseUrl(value);
  } catch (error) {
    throw new ConfigError(`DATABASE_URL ${(error as Error).message}, got "${redact(value)}"`);
  }
}

/** TRACE_URL_TEMPLATE: an http(s) address with `{traceId}` where the trace id goes (the dashboard fills it in). */
function readTraceUrlTemplate(read: EnvReader): string | undefined {
  const value = read.optionalString('TRACE_URL_TEMPLATE');
  if (value === undefined) return undefined;
  const filled = value.replaceAll('{traceId}', '0');
  const protocol = URL.canParse(filled) ? new URL(filled).protocol : undefined;
  if (!value.includes('{traceId}') || (protocol !== 'http:' && protocol !== 'https:')) {
    throw new ConfigError(`TRACE_URL_TEMPLATE must be an http(s) address with {traceId} in it, got "${value}"`);
  }
  return value;
}

/** Parses and validates the coordinator's environment once, at start. */
export function loadCoordinatorConfig(env: Record<string, string | undefined>): CoordinatorConfig {
  const read = new EnvReader(env);
  const databasePoolSize = read.integer('DATABASE_POOL_SIZE', 10, 2, 1000);
  const config: CoordinatorConfig = {
    port: read.integer('PORT', 3000, 0, 65535),
    host: read.host('HOST', '0.0.0.0'),
    database: readDatabaseUrl(read),
    databasePoolSize,
    databaseClaimPoolSize: read.integer('DATABASE_CLAIM_POOL_SIZE', Math.max(2, Math.ceil(databasePoolSize / 2)), 1, 1000),
    claimMinIdleTimeMs: read.integer('CLAIM_MIN_IDLE_TIME_MS', LEASE_DEFAULTS.claimMinIdleTimeMs, 100, 86_400_000),
    maxStalls: read.integer('MAX_STALLS', 3, 0, 1_000),
    heartbeatIntervalMs: read.integer('HEARTBEAT_INTERVAL_MS', LEASE_DEFAULTS.heartbeatIntervalMs, 50, 86_400_000),
    claimPollIntervalMs: read.integer('CLAIM_POLL_INTERVAL_MS', 1_000, 10, 60_000),
    timerHorizonMs: read.integer('TIMER_HORIZON_MS', 60_000, 1_000, 86_400_000),
    timerMaxEntries: read.integer('TIMER_MAX_ENTRIES', 20_000, 10, 10_000_000),
    scheduleMisfireGraceMs: read.integer('SCHEDULE_MISFIRE_GRACE_MS', 5_000, 0, 86_400_000),
    listenerProbeIntervalMs: read.integer('LISTENER_PROBE_INTERVAL_MS', 10_000, 100, 600_000),
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 2 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    dispatch: read.oneOf('DISPATCH', DISPATCH_MODES, 'none'),
    ...readRedis(read),
    outboxPollIntervalMs: read.integer('OUTBOX_POLL_INTERVAL_MS', 1_000, 10, 60_000),
    outboxBatchSize: read.integer('OUTBOX_BATCH_SIZE', 100, 1, 10_000),
    outboxMaxRetries: read.integer('OUTBOX_MAX_RETRIES', 10, 1, 1_000),
    outboxRetryBaseMs: read.integer('OUTBOX_RETRY_BASE_MS', 500, 1, 3_600_000),
    outboxRetryMaxMs: read.integer('OUTBOX_RETRY_MAX_MS', 60_000, 1, 86_400_000),
    outboxStaleInFlightMs: read.integer('OUTBOX_STALE_IN_FLIGHT_MS', 30_000, 1_000, 86_400_000),
    republishIntervalMs: read.integer('REPUBLISH_INTERVAL_MS', 5_000, 100, 3_600_000),
    republishAfterMs: read.integer('REPUBLISH_AFTER_MS', 30_000, 0, 86_400_000),
    leaderCheckIntervalMs: read.integer('LEADER_CHECK_INTERVAL_MS', 2_000, 100, 600_000),
    runRetentionMs: read.integer('RUN_RETENTION_MS', 7 * DAY_MS, 0, RETENTION_MAX_MS),
    runRetentionOverrides: readRetentionOverrides(read),
    retentionIntervalMs: read.integer('RETENTION_INTERVAL_MS', 60_000, 100, 86_400_000),
    retentionBatchSize: read.integer('RETENTION_BATCH_SIZE', 500, 1, 10_000),
    retentionBusyPercent: read.integer('RETENTION_BUSY_PERCENT', 50, 1, 100),
    clientToken: read.optionalString('CLIENT_TOKEN'),
    workerToken: read.optionalString('WORKER_TOKEN'),
    authDisabled: read.boolean('AUTH_DISABLED', false),
    dashboardDir: read.optionalString('DASHBOARD_DIR'),
    traceUrlTemplate: readTraceUrlTemplate(read),
    ...readLogging(read),
    tracing: readTracing(read, 'nest-durable-coordinator'),
    outboxBacklogDegradedSeconds: read.integer('OUTBOX_BACKLOG_DEGRADED_SECONDS', 60, 1, 86_400),
    deadLettersDegraded: read.integer('DEAD_LETTERS_DEGRADED', 1, 1, 1_000_000_000),
    feedKeepAliveMs: read.integer('FEED_KEEPALIVE_MS', 15_000, 100, 600_000),
    applicationName: `${COORDINATOR_APPLICATION_NAME} ${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
  };
  if (!config.authDisabled) {
    for (const [name, token] of [
      ['CLIENT_TOKEN', config.clientToken],
      ['WORKER_TOKEN', config.workerToken],
    ] as const) {
      if (!token) throw new ConfigError(`${name} is required (or set AUTH_DISABLED=true to run without authentication)`);
      if (token.length < 16) throw new ConfigError(`${name} must be at least 16 characters`);
    }
  }
  if (config.claimMinIdleTimeMs <= config.heartbeatIntervalMs) {
    throw new ConfigError(
      `CLAIM_MIN_IDLE_TIME_MS (${config.claimMinIdleTimeMs}) must be larger than HEARTBEAT_INTERVAL_MS (${config.heartbeatIntervalMs}), ` +
        'or live runs would be stolen between heartbeats',
    );
  }
  return config;
}
