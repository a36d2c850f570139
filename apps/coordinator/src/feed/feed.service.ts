import type { FeedQuery, RunChange, RunProgress } from '@nest-durable/common';
import { MetricsService } from '@app/metrics';
import { NotificationListener, RUN_CHANGES_CHANNEL, RUN_PROGRESS_CHANNEL } from '@app/outbox';
import { Database, unwatchFeed, watchFeed } from '@app/persistence';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { parseRunChanges, parseRunProgress } from './run-changes';

/**
 * A client too slow to read its feed is disconnected once this much is waiting for it, rather than
 * buffered without bound (it reconnects and re-reads).
 */
const MAX_UNSENT_BYTES = 1024 * 1024;

/**
 * How long this coordinator's `feed_watchers` row lasts, refreshed every third of it while a feed is open: the
 * trigger keeps announcing changes up to this long after the last feed closed (or its coordinator died).
 */
const WATCH_TTL_MS = 60_000;

/**
 * A statement that checked `feed_watchers` just before this coordinator's row committed may commit after it,
 * unannounced: once this long after the row was written, feeds get a `resync` (one re-read covers it).
 */
const SETTLE_MS = 1_000;

interface Follower {
  filter: FeedQuery;
  response: ServerResponse;
}

/**
 * GET /v1/feed: run changes as server-sent events. One subscription to the LISTEN session serves every open
 * feed of this coordinator; every coordinator LISTENs, so a change committed through any of them reaches all
 * feeds. While this coordinator has a feed open it keeps a `feed_watchers` row alive, without which changes are
 * not announced at all (the NOTIFY costs commits their concurrency). A feed ends when its client goes away or
 * the app shuts down, and takes nothing with it but its entry.
 */
@Injectable()
export class FeedService implements OnModuleInit, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger(FeedService.name);
  private readonly followers = new Set<Follower>();
  private readonly unsubscribe: (() => void)[] = [];
  private keepAlive: NodeJS.Timeout | undefined;
  private refresh: NodeJS.Timeout | undefined;
  private starting: Promise<void> | undefined;
  /** When the last upsert of this coordinator's watch row that succeeded started (Date.now()). */
  private lastWatchedAt: number | undefined;
  private closed = false;

  constructor(
    private readonly listener: NotificationListener,
    private readonly db: Database,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    metrics: MetricsService,
  ) {
    metrics.gauge('feeds_open', 'Live feeds (GET /v1/feed) open on this coordinator', () => this.followers.size);
  }

  onModuleInit(): void {
    this.unsubscribe.push(
      this.listener.subscribe(RUN_CHANGES_CHANNEL, {
        notified: (payload) => this.publish('run', parseRunChanges(payload)),
        // Changes committed while the session was down were not announced: followers re-read.
        reconnected: () => this.broadcast('event: resync\ndata: {}\n\n'),
      }),
      // Progress missed while the session was down is on the run (re-read at the resync above).
      this.listener.subscribe(RUN_PROGRESS_CHANNEL, {
        notified: (payload) => this.publish('progress', parseRunProgress(payload)),
        reconnected: () => undefined,
      }),
    );
    this.keepAlive = setInterval(() => this.broadcast(': keep-alive\n\n'), this.config.feedKeepAliveMs);
    this.keepAlive.unref();
  }

  /** Before the HTTP server drains: end every feed, or the server would wait for them forever. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closed = true;
    this.onModuleDestroy();
    for (const follower of [...this.followers]) this.end(follower);
    await unwatchFeed(this.db, this.config.applicationName).catch(() => undefined);
  }

  onModuleDestroy(): void {
    clearInterval(this.keepAlive);
    clearInterval(this.refresh);
    this.refresh = undefined;
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
  }

  /**
   * Streams changes matching `filter` to `response` until either side ends it. The response starts once this
   * coordinator's watch is recorded, so every change committed after the client sees it open is announced
   * (but for the statements in flight then, which the `resync` SETTLE_MS later covers).
   */
  async follow(filter: FeedQuery, response: ServerResponse): Promise<void> {
    if (!this.closed) await this.watch();
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    if (this.closed || response.destroyed) {
      response.end();
      return;
    }
    response.flushHeaders();
    const follower: Follower = { filter, response };
    this.followers.add(follower);
    response.on('close', () => this.forget(follower));
    response.write(': connected\n\n');
  }

  /**
   * Records that this coordinator watches, at every feed it opens (one upsert: a row that expired or was removed
   * meanwhile is back before the feed starts), and keeps it recorded while any is open.
   */
  private watch(): Promise<void> {
    this.starting ??= this.recordWatch()
      .then((lapsed) => {
        if (this.closed) return;
        if (this.refresh) {
          if (lapsed) this.resyncSoon();
          return;
        }
        this.refresh = setInterval(() => {
          if (this.followers.size === 0) {
            // The last feed closed: the row expires by itself (a page reloaded meanwhile finds it alive).
            clearInterval(this.refresh);
            this.refresh = undefined;
            return;
          }
          this.recordWatch()
            .then((lapsed) => {
              if (!lapsed) return;
              this.logger.log('the feed watch is recorded again after it expired: open feeds re-read');
              this.resyncSoon();
            })
            .catch((error: Error) => this.logger.warn(`could not refresh the feed watch: ${error.message}`));
        }, WATCH_TTL_MS / 3);
        this.refresh.unref();
        this.resyncSoon();
      })
      .finally(() => {
        this.starting = undefined;
      });
    return this.starting;
  }

  /**
   * Upserts this coordinator's row; resolves with whether the row may have expired since the last upsert that
   * succeeded (refreshes failed for a TTL): changes committed meanwhile were not announced. Measured from the
   * start of that upsert, before its now(), so a lapse is never missed.
   */
  private async recordWatch(): Promise<boolean> {
    const startedAt = Date.now();
    await watchFeed(this.db, this.config.applicationName, WATCH_TTL_MS);
    const lapsed = this.lastWatchedAt !== undefined && Date.now() - this.lastWatchedAt >= WATCH_TTL_MS;
    this.lastWatchedAt = startedAt;
    return lapsed;
  }

  /** Feeds re-read once the statements that missed the watch row have settled. */
  private resyncSoon(): void {
    setTimeout(() => this.broadcast('event: resync\ndata: {}\n\n'), SETTLE_MS).unref();
  }

  /** `run` events of transitions, `progress` events of progress reported. */
  private publish(event: 'run' | 'progress', changes: (RunChange | RunProgress)[]): void {
    for (const follower of this.followers) {
      const { runId, workflow } = follower.filter;
      const text = changes
        .filter((change) => (!runId || change.id === runId) && (!workflow || change.workflow === workflow))
        .map((change) => `event: ${event}\ndata: ${JSON.stringify(change)}\n\n`)
        .join('');
      if (text) this.send(follower, text);
    }
  }

  private broadcast(text: string): void {
    for (const follower of this.followers) this.send(follower, text);
  }

  private send(follower: Follower, text: string): void {
    if (follower.response.writableLength > MAX_UNSENT_BYTES) {
      this.end(follower);
      return;
    }
    follower.response.write(text);
  }

  private end(follower: Follower): void {
    this.forget(follower);
    follower.response.end();
  }

  private forget(follower: Follower): void {
    this.followers.delete(follower);
  }
}
