import type { MetricsService } from '@app/metrics';
import type { NotificationListener } from '@app/outbox';
import type { Database } from '@app/persistence';
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { FeedService } from './feed.service';

const RESYNC = 'event: resync\ndata: {}\n\n';

/** A feed's response that keeps what was written to it. */
function openResponse(): ServerResponse & { written: string[] } {
  const written: string[] = [];
  const response = {
    written,
    destroyed: false,
    writableLength: 0,
    writeHead: () => response,
    flushHeaders: () => undefined,
    on: () => response,
    end: () => undefined,
    write: (text: string) => written.push(text) > 0,
  };
  return response as unknown as ServerResponse & { written: string[] };
}

describe('FeedService watch refresh', () => {
  let refreshFails = false;
  let feeds: FeedService;

  beforeEach(() => {
    jest.useFakeTimers();
    refreshFails = false;
    // The watch (an upsert of feed_watchers, watchFeed) fails while refreshFails; the unwatch succeeds.
    const db = {
      query: async (statement: string) => {
        if (refreshFails && statement.startsWith('INSERT INTO feed_watchers')) throw new Error('connection terminated');
        return [];
      },
    } as unknown as Database;
    const listener = { subscribe: () => () => undefined } as unknown as NotificationListener;
    const config = { applicationName: 'coordinator-a', feedKeepAliveMs: 3_600_000 } as CoordinatorConfig;
    feeds = new FeedService(listener, db, config, { gauge: () => undefined } as unknown as MetricsService);
    const logger = (feeds as unknown as { logger: { warn: () => void; log: () => void } }).logger;
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    jest.spyOn(logger, 'log').mockImplementation(() => undefined);
    feeds.onModuleInit();
  });

  afterEach(() => {
    feeds.onModuleDestroy();
    jest.useRealTimers();
  });

  // Refreshes every 20 s from 0; the TTL is 60 s.
  it('sends a resync once the watch is recorded again after failing to refresh for its whole TTL', async () => {
    const response = openResponse();
    await feeds.follow({}, response);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(response.written.filter((text) => text === RESYNC)).toHaveLength(1); // the one every new watch sends
    // Refreshes that succeed (every 20 s) announce nothing.
    await jest.advanceTimersByTimeAsync(60_000);
    expect(response.written.filter((text) => text === RESYNC)).toHaveLength(1);
    // One refresh failing is covered by the row's TTL: no resync.
    refreshFails = true;
    await jest.advanceTimersByTimeAsync(20_000);
    refreshFails = false;
    await jest.advanceTimersByTimeAsync(22_000);
    expect(response.written.filter((text) => text === RESYNC)).toHaveLength(1);
    // Failing for the whole TTL: the row expired and changes went unannounced; the next success resyncs, a second later.
    refreshFails = true;
    await jest.advanceTimersByTimeAsync(60_000);
    refreshFails = false;
    await jest.advanceTimersByTimeAsync(17_000); // to the next refresh, at 180 s
    expect(response.written.filter((text) => text === RESYNC)).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(response.written.filter((text) => text === RESYNC)).toHaveLength(2);
  });
});
