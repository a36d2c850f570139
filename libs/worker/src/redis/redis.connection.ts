import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';

export const REDIS_OPTIONS = Symbol('REDIS_OPTIONS');

export interface RedisConnectionOptions {
  url: string;
  /** Every key this deployment uses starts with it, so deployments can share a Redis. */
  prefix: string;
}

/**
 * The one place that opens Redis connections. Commands fail fast while Redis is down (no offline
 * queue), so callers see the failure and fall back (the outbox retries, workers fail over);
 * ioredis keeps reconnecting in the background. Every connection is closed on shutdown.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisConnection.name);
  private readonly connections = new Set<Redis>();
  readonly client: Redis;

  constructor(@Inject(REDIS_OPTIONS) readonly options: RedisConnectionOptions) {
    this.client = this.open('commands');
  }

  get prefix(): string {
    return this.options.prefix;
  }

  /** A separate connection, e.g. for one blocking reader (a blocking command occupies its whole connection). */
  open(purpose: string, extra: RedisOptions = {}): Redis {
    const connection = new Redis(this.options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * 2 ** times, 2_000),
      ...extra,
    });
    let down = false;
    connection.on('error', (error) => {
      if (!down) this.logger.warn(`Redis (${purpose}) unavailable: ${error.message}`);
      down = true;
    });
    connection.on('ready', () => {
      if (down) this.logger.log(`Redis (${purpose}) is back`);
      down = false;
    });
    this.connections.add(connection);
    return connection;
  }

  /**
   * Resolves once `connection` is connected (at once if it is), or fails after `timeoutMs`: without
   * an offline queue, a command sent while it is still connecting would fail at once.
   */
  async whenReady(connection: Redis, timeoutMs = 2_000): Promise<void> {
    if (connection.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        connection.off('ready', onReady);
        reject(new Error(`Redis not reachable within ${timeoutMs} ms (${connection.status})`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      connection.once('ready', onReady);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.connections].map((connection) => connection.quit().catch(() => connection.disconnect())));
  }
}
