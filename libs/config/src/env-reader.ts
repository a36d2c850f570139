import { DurableError } from '@nest-durable/common';
import { isIP } from 'node:net';

/** Thrown when the environment is missing or malformed: its message is the one line to print. */
export class ConfigError extends DurableError {
  constructor(message: string) {
    super('config_invalid', message);
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads typed values out of an environment once, at start. Every problem names the variable
 * and what it expects, so a bad deployment fails with one readable line.
 */
export class EnvReader {
  constructor(private readonly env: Env) {}

  string(name: string, fallback?: string): string {
    const value = this.env[name];
    if (value === undefined || value === '') {
      if (fallback === undefined) throw new ConfigError(`${name} is required`);
      return fallback;
    }
    return value;
  }

  optionalString(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  /** The variable read by `parse` (which throws on a bad value), or undefined when it is not set. */
  optional<T>(name: string, parse: (value: string) => T): T | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    try {
      return parse(value);
    } catch (error) {
      throw new ConfigError(`${name}: ${(error as Error).message}, got "${value}"`);
    }
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^-?\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  }

  /** Comma-separated values; empty when unset. */
  list(name: string): string[] {
    return (this.env[name] ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0);
  }

  /** Comma-separated `host:port` pairs (an IPv6 host in brackets); empty when unset. */
  hostPorts(name: string): { host: string; port: number }[] {
    return this.list(name).map((item) => {
      const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(item);
      if (!match || Number(match[3]) < 1 || Number(match[3]) > 65535) {
        throw new ConfigError(`${name} must be comma-separated host:port pairs, got "${item}"`);
      }
      return { host: match[1] ?? match[2], port: Number(match[3]) };
    });
  }

  /**
   * An address to listen on: an IP address, or a host name (RFC 1123 labels; dotted digits only if they are an
   * IPv4 address). Whether a name resolves is learnt when the app listens.
   */
  host(name: string, fallback: string): string {
    const value = this.string(name, fallback);
    const label = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
    const named = value.length <= 253 && value.split('.').every((part) => label.test(part)) && !/^[0-9.]+$/.test(value);
    if (!isIP(value) && !named) throw new ConfigError(`${name} must be an IP address or a host name, got "${value}"`);
    return value;
  }

  /** Comma-separated values, each checked by `parse` (whose error message says what is wrong with it); empty when unset. */
  listOf<T>(name: string, parse: (item: string) => T): T[] {
    return this.list(name).map((item) => {
      try {
        return parse(item);
      } catch (error) {
        throw new ConfigError(`${name}: ${(error as Error).message}, got "${item}"`);
      }
    });
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.string(name, fallback);
    if (!allowed.includes(value as T)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
    return value as T;
  }

  pattern(name: string, pattern: RegExp, expected: string, fallback: string): string {
    const value = this.env[name] ?? fallback;
    if (!pattern.test(value)) throw new ConfigError(`${name} must be ${expected}, got "${value}"`);
    return value;
  }

  url(name: string, protocols: readonly string[], fallback?: string): string {
    return checkUrl(name, this.string(name, fallback), protocols);
  }

  /** Comma-separated URLs, at least one (`fallback` when unset). */
  urls(name: string, protocols: readonly string[], fallback: string): string[] {
    const values = this.list(name);
    return (values.length > 0 ? values : [fallback]).map((value) => checkUrl(name, value, protocols));
  }
}

function checkUrl(name: string, value: string, protocols: readonly string[]): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be a URL (${protocols.join(' or ')}), got "${redact(value)}"`);
  }
  if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
    throw new ConfigError(`${name} must be a ${protocols.join(' or ')} URL, got "${redact(value)}"`);
  }
  return value;
}

/** Hides a password in a URL so it never reaches a log line. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}

export const LOG_LEVELS = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Settings both apps read the same way. */
export function readLogging(read: EnvReader): { logLevel: LogLevelName; logFormat: 'json' | 'pretty' } {
  return {
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'log'),
    logFormat: read.oneOf('LOG_FORMAT', ['json', 'pretty'] as const, process.stdout.isTTY ? 'pretty' : 'json'),
  };
}

export interface RedisSettings {
  /** The one Redis node; not used when `redisClusterNodes` names a cluster. */
  redisUrl: string;
  /** Seed nodes of a Redis Cluster (the client discovers the rest); empty for a single node. */
  redisClusterNodes: { host: string; port: number }[];
  redisPrefix: string;
  streamPartitions: number;
}

export function readRedis(read: EnvReader): RedisSettings {
  const redisClusterNodes = read.hostPorts('REDIS_CLUSTER_NODES');
  if (redisClusterNodes.length > 0 && read.optionalString('REDIS_URL') !== undefined) {
    throw new ConfigError(
      'REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_URL for one Redis node or REDIS_CLUSTER_NODES for a Redis Cluster, not both',
    );
  }
  return {
    redisUrl: read.url('REDIS_URL', ['redis', 'rediss'], 'redis://127.0.0.1:6379'),
    redisClusterNodes,
    redisPrefix: read.pattern('REDIS_PREFIX', /^[A-Za-z0-9._:-]{0,64}$/, 'up to 64 letters, digits or . _ : -', 'wf:'),
    streamPartitions: read.integer('STREAM_PARTITIONS', 4, 1, 1024),
  };
}

/** How to connect (what RedisModule.forRoot takes): the cluster when seed nodes are given, else the one node. */
export function redisConnectionOptions(settings: Pick<RedisSettings, 'redisUrl' | 'redisClusterNodes' | 'redisPrefix'>): {
  url?: string;
  clusterNodes?: { host: string; port: number }[];
  prefix: string;
} {
  return settings.redisClusterNodes.length > 0
    ? { clusterNodes: settings.redisClusterNodes, prefix: settings.redisPrefix }
    : { url: settings.redisUrl, prefix: settings.redisPrefix };
}

/** Loads an app's config, or prints the one line that says what is wrong and exits with 78 (EX_CONFIG). */
export function loadConfigOrExit<T>(app: string, load: () => T): T {
  try {
    return load();
  } catch (error) {
    exitOnConfigError(app, error);
  }
}

/**
 * For an app that failed to start: a ConfigError as exitOnConfigError; anything else (its details logged by
 * Nest as it failed) in one line, exiting with 1.
 */
export function exitOnStartError(app: string, error: unknown): never {
  if (error instanceof ConfigError) exitOnConfigError(app, error);
  console.error(`${app}: cannot start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}

/** For a ConfigError: prints its one line and exits with 78 (EX_CONFIG). Anything else is thrown on. */
export function exitOnConfigError(app: string, error: unknown): never {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`${app}: invalid configuration: ${error.message}`);
  process.exit(78);
}
