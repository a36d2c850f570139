import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Cluster, Redis, type RedisOptions } from 'ioredis';

export const REDIS_OPTIONS = Symbol('REDIS_OPTIONS');

const NODE_ERROR_LOG_MS = 10_000;
/** Longer than a failover the cluster client rides through (retries every 300 ms, up to 40 redirections). */
const COMMAND_TIMEOUT_MS = 15_000;
/**
 * How long ioredis waits for a socket it ended to close before destroying it. It arms that timer on every
 * disconnect, even of a socket that closed already (Redis down at shutdown) and never says so again: its
 * default 2 s then holds the process open after the application shut down.
 */
const DISCONNECT_TIMEOUT_MS = 200;

export interface RedisConnectionOptions {
  /** One Redis node: `redis://…` or `rediss://…`. */
  url?: string;
  /** Or the seed nodes of a Redis Cluster (the client discovers the others); when given, `url` must not be. */
  clusterNodes?: { host: string; port: number }[];
  /** Every key this deployment uses starts with it, so deployments can share a Redis. */
  prefix: string;
}

/** A single node or a cluster: the commands callers send are the same. */
export type RedisClient = Redis | Cluster;

/** For a blocking reader: the client-side guard that ends a blocking read that never returns. */
export interface BlockingReaderOptions {
  blockingTimeout: number;
  blockingTimeoutGrace: number;
}

/**
 * The one place that opens Redis connections, to a single node or a Redis Cluster. Commands fail
 * fast while Redis is down (no offline queue), so callers see the failure and fall back (the outbox
 * retries, workers fail over); ioredis keeps reconnecting in the background. In a cluster, ioredis
 * follows MOVED/ASK redirections and refreshes its slot map, and a command whose node went away is
 * retried every 300 ms (up to 40 redirections) while a replica takes over: a failover within a few
 * seconds is ridden through, a longer one fails the command like an outage. No command waits for an
 * answer longer than COMMAND_TIMEOUT_MS. Every connection is closed on shutdown.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisConnection.name);
  private readonly connections = new Set<RedisClient>();
  readonly client: RedisClient;

  constructor(@Inject(REDIS_OPTIONS) readonly options: RedisConnectionOptions) {
    if (options.clusterNodes?.length && options.url) throw new Error('Redis: give either url or clusterNodes, not both');
    if (!options.clusterNodes?.length && !options.url) throw new Error('Redis: give url or clusterNodes');
    this.client = this.open('commands');
  }

  get prefix(): string {
    return this.options.prefix;
  }

  /**
   * A separate connection, e.g. for one blocking reader (a blocking command occupies its whole
   * connection). In a cluster that is a Cluster client of its own rather than a socket per master:
   * it connects to nodes as commands need them, so a reader whose reads name one slot holds a socket
   * to that slot's master (and one to ask for the slot map), and it follows the slot through a
   * failover or a resharding by itself. Readers sharing a socket per master would block each other,
   * and which master serves a slot changes when one fails.
   */
  open(purpose: string, blocking?: BlockingReaderOptions): RedisClient {
    // A command that gets no answer fails after COMMAND_TIMEOUT_MS (a blocking read has its own guard instead).
    const nodeOptions: RedisOptions = {
      connectTimeout: 2_000,
      disconnectTimeout: DISCONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      ...(blocking ?? { commandTimeout: COMMAND_TIMEOUT_MS }),
    };
    const connection: RedisClient = this.options.clusterNodes?.length
      ? new Cluster(this.options.clusterNodes, {
          enableOfflineQueue: false,
          retryDelayOnFailover: 300,
          retryDelayOnClusterDown: 300,
          maxRedirections: 40,
          slotsRefreshTimeout: 2_000,
          clusterRetryStrategy: (times) => Math.min(100 * 2 ** times, 2_000),
          redisOptions: nodeOptions,
        })
      : new Redis(this.options.url!, {
          ...nodeOptions,
          enableOfflineQueue: false,
          retryStrategy: (times) => Math.min(100 * 2 ** times, 2_000),
        });
    let down = false;
    connection.on('error', (error: Error) => {
      if (!down) this.logger.warn(`Redis (${purpose}) unavailable: ${error.message}`);
      down = true;
    });
    connection.on('ready', () => {
      if (down) this.logger.log(`Redis (${purpose}) is back`);
      down = false;
    });
    // A cluster stays ready while one node is away (a replica takes its slots), and ioredis tries the
    // node again every few hundred ms meanwhile: one line per node and NODE_ERROR_LOG_MS, not one per try.
    const reported = new Map<string, number>();
    connection.on('node error', (error: Error, node: string) => {
      if (Date.now() - (reported.get(node) ?? 0) < NODE_ERROR_LOG_MS) return;
      reported.set(node, Date.now());
      this.logger.warn(`Redis (${purpose}) node ${node} unavailable: ${error.message}`);
    });
    this.connections.add(connection);
    return connection;
  }

  /**
   * Resolves once `connection` is connected (at once if it is). Fails at once when it is down (its last
   * attempt failed and it waits to retry: a refused connection never brings `ready` meanwhile), as soon
   * as the attempt under way fails, or after `timeoutMs` (a host that does not answer at all). Without an
   * offline queue, a command sent while it is still connecting would fail at once.
   */
  async whenReady(connection: RedisClient, timeoutMs = 2_000): Promise<void> {
    if (connection.status === 'ready') return;
    if (isDown(connection)) throw new Error(`Redis not reachable (${connection.status})`);
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        clearTimeout(timer);
        connection.off('ready', onReady);
        connection.off('error', onFailure);
        connection.off('close', onFailure);
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => settle();
      const onFailure = (error?: Error) => settle(new Error(`Redis not reachable${error ? `: ${error.message}` : ` (${connection.status})`}`));
      const timer = setTimeout(() => settle(new Error(`Redis not reachable within ${timeoutMs} ms (${connection.status})`)), timeoutMs);
      connection.once('ready', onReady);
      connection.once('error', onFailure);
      connection.once('close', onFailure);
    });
  }

  /**
   * Calls `listener` each time `connection` is ready again after it was lost (or was down when this was
   * called): whatever Redis held may be gone, as after a restart without persistence. Returns the
   * function that stops it.
   */
  onRecovered(connection: RedisClient, listener: () => void): () => void {
    let lost = isDown(connection);
    const onLost = () => (lost = true);
    const onReady = () => {
      if (!lost) return;
      lost = false;
      listener();
    };
    connection.on('close', onLost);
    connection.on('ready', onReady);
    return () => {
      connection.off('close', onLost);
      connection.off('ready', onReady);
    };
  }

  /**
   * One command per item, all sent at once; resolves with each item's [error, reply], in order. Not
   * a pipeline: a cluster pipeline must not span nodes, and one caught in a failover was seen never to
   * settle (ioredis 6: part of it left unsent), while single commands follow their key through MOVED
   * and failover retries on their own. Sent together they share the socket's round trip all the same.
   */
  async sendEach<T>(items: readonly T[], send: (client: RedisClient, item: T) => Promise<unknown>): Promise<[Error | null, unknown][]> {
    return Promise.all(
      items.map((item) =>
        send(this.client, item).then(
          (reply): [null, unknown] => [null, reply],
          (error: Error): [Error, null] => [error, null],
        ),
      ),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.connections].map((connection) => connection.quit().catch(() => connection.disconnect())));
  }
}

/** Its last connection attempt failed (or it was closed): no `ready` comes before the next attempt, if any. */
function isDown(connection: RedisClient): boolean {
  return connection.status === 'reconnecting' || connection.status === 'close' || connection.status === 'end';
}
