import { type QueueDepth, type Stats, STATS_WINDOW_MS, type StatsWindow } from '@nest-durable/client';
import { Injectable } from '@nestjs/common';
import { StatsRepository } from './stats.repository';

const MINUTE_MS = 60_000;

/** GET /v1/stats: what an overview page shows, read from PostgreSQL (the same for every coordinator). */
@Injectable()
export class StatsService {
  constructor(private readonly repository: StatsRepository) {}

  async stats(window: StatsWindow): Promise<Stats> {
    const now = Date.now();
    // Whole minutes: the first bucket of the throughput is as full as the others.
    const since = new Date(Math.floor((now - STATS_WINDOW_MS[window]) / MINUTE_MS) * MINUTE_MS);
    const [runs, throughput, queues, backlog] = await Promise.all([
      this.repository.runsSince(since),
      this.repository.throughputSince(since),
      this.repository.queues(),
      this.repository.backlog(),
    ]);
    return {
      window,
      generatedAt: new Date(now).toISOString(),
      runs,
      throughput: throughput.map(({ minute, started, finished }) => ({ minute: minute.toISOString(), started, finished })),
      queues: queues.map((queue): QueueDepth => ({ ...queue, hosted: false })),
      outbox: { backlog: backlog.backlog, oldestAgeMs: backlog.oldestAgeMs },
      deadLetters: backlog.deadLetters,
      workersOnline: 0,
    };
  }
}
