import type { FeedQuery, RunChange } from '@nest-durable/client';
import { MetricsService } from '@app/metrics';
import { NotificationListener, RUN_CHANGES_CHANNEL } from '@app/outbox';
import { BeforeApplicationShutdown, Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Response } from 'express';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { parseRunChanges } from './run-changes';

/**
 * A client too slow to read its feed is disconnected once this much is waiting for it, rather than
 * buffered without bound (it reconnects and re-reads).
 */
const MAX_UNSENT_BYTES = 1024 * 1024;

interface Follower {
  filter: FeedQuery;
  response: Response;
}

/**
 * GET /v1/feed: run changes as server-sent events. One subscription to the LISTEN session serves every open
 * feed of this coordinator; every coordinator LISTENs, so a change committed through any of them reaches all
 * feeds. A feed ends when its client goes away or the app shuts down, and takes nothing with it but its entry.
 */
@Injectable()
export class FeedService implements OnModuleInit, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly followers = new Set<Follower>();
  private unsubscribe: (() => void) | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly listener: NotificationListener,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    metrics: MetricsService,
  ) {
    metrics.gauge('feeds_open', 'Live feeds (GET /v1/feed) open on this coordinator', () => this.followers.size);
  }

  onModuleInit(): void {
    this.unsubscribe = this.listener.subscribe(RUN_CHANGES_CHANNEL, {
      notified: (payload) => this.publish(parseRunChanges(payload)),
      // Changes committed while the session was down were not announced: followers re-read.
      reconnected: () => this.broadcast('event: resync\ndata: {}\n\n'),
    });
    this.keepAlive = setInterval(() => this.broadcast(': keep-alive\n\n'), this.config.feedKeepAliveMs);
    this.keepAlive.unref();
  }

  /** Before the HTTP server drains: end every feed, or the server would wait for them forever. */
  beforeApplicationShutdown(): void {
    this.closed = true;
    this.onModuleDestroy();
    for (const follower of [...this.followers]) this.end(follower);
  }

  onModuleDestroy(): void {
    clearInterval(this.keepAlive);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Streams changes matching `filter` to `response` until either side ends it. */
  follow(filter: FeedQuery, response: Response): void {
    response.status(200);
    response.set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    if (this.closed) {
      response.end();
      return;
    }
    response.flushHeaders();
    const follower: Follower = { filter, response };
    this.followers.add(follower);
    response.on('close', () => this.forget(follower));
    response.write(': connected\n\n');
  }

  private publish(changes: RunChange[]): void {
    for (const follower of this.followers) {
      const { runId, workflow } = follower.filter;
      const text = changes
        .filter((change) => (!runId || change.id === runId) && (!workflow || change.workflow === workflow))
        .map((change) => `event: run\ndata: ${JSON.stringify(change)}\n\n`)
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
