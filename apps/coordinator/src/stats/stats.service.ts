import { type QueueDepth, type Stats, STATS_WINDOW_MS, type StatsWindow } from '@nest-durable/client';
import { Injectable } from '@nestjs/common';
import { type MinuteCount, StatsRepository } from './stats.repository';

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
      throughput: everyMinute(since, now, throughput),
      queues: queues.map((queue): QueueDepth => ({ ...queue, hosted: false })),
      outbox: { backlog: backlog.backlog, oldestAgeMs: backlog.oldestAgeMs },
      deadLetters: backlog.deadLetters,
      workersOnline: 0,
    };
  }
}

/** Every minute from `since` to the one of `now`, oldest first, with the counts of those that had any. */
function everyMinute(since: Date, now: number, counts: MinuteCount[]): Stats['throughput'] {
  const byMinute = new Map(counts.map((count) => [count.minute.getTime(), count]));
  const minutes: Stats['throughput'] = [];
  for (let minute = since.getTime(); minute <= now; minute += MINUTE_MS) {
    const count = byMinute.get(minute);
    minutes.push({ minute: new Date(minute).toISOString(), started: count?.started ?? 0, finished: count?.finished ?? 0 });
  }
  return minutes;
}
