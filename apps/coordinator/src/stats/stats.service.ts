import { type QueueDepth, queueName, type Stats, STATS_WINDOW_MS, type StatsWindow, type WorkerView } from '@nest-durable/common';
import { Database, dispatchBacklog, type MinuteCount, type QueueRow, queueDepths, runsSince, throughputSince } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { WorkersService } from '../workers/workers.service';

const MINUTE_MS = 60_000;

/** GET /v1/stats: what an overview page shows, read from PostgreSQL (the same for every coordinator). */
@Injectable()
export class StatsService {
  constructor(
    private readonly db: Database,
    private readonly workers: WorkersService,
  ) {}

  async stats(window: StatsWindow): Promise<Stats> {
    const now = Date.now();
    // Whole minutes: the first bucket of the throughput is as full as the others.
    const since = new Date(Math.floor((now - STATS_WINDOW_MS[window]) / MINUTE_MS) * MINUTE_MS);
    const [runs, throughput, queues, backlog, workers] = await Promise.all([
      runsSince(this.db, since),
      throughputSince(this.db, since),
      queueDepths(this.db),
      dispatchBacklog(this.db),
      this.workers.list(),
    ]);
    const online = workers.items.filter((worker) => worker.online);
    return {
      window,
      generatedAt: new Date(now).toISOString(),
      runs,
      throughput: everyMinute(since, now, throughput),
      queues: withServedQueues(queues, online),
      outbox: { backlog: backlog.backlog, oldestAgeMs: backlog.oldestAgeMs },
      deadLetters: backlog.deadLetters,
      workersOnline: online.length,
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

/**
 * The queues with unfinished runs, and those the online workers serve (with nothing in them), each saying
 * whether an online worker serves it: a queue with ready runs that none serves is stuck until one comes.
 */
function withServedQueues(queues: QueueRow[], online: WorkerView[]): QueueDepth[] {
  const served = new Map<string, QueueDepth>();
  const empty = { ready: 0, delayed: 0, running: 0, waiting: 0, oldestReadyAgeMs: null };
  for (const worker of online) {
    for (const { name, version, shards } of worker.workflows) {
      // A worker serves either the runs without a shard (no shards) or those of its shards.
      for (const shard of shards.length > 0 ? shards : [null]) {
        const queue = queueName(name, version, shard ?? undefined);
        served.set(queue, { queue, workflow: name, version, shard, ...empty, hosted: true });
      }
    }
  }
  const depths = new Map(queues.map((queue) => [queue.queue, { ...queue, hosted: served.has(queue.queue) }]));
  for (const [queue, depth] of served) if (!depths.has(queue)) depths.set(queue, depth);
  return [...depths.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}
