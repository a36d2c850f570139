import type { RunStatus } from '@nest-durable/common';
import { Database, uuidv7Floor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

export interface RunCount {
  workflow: string;
  version: string;
  status: RunStatus;
  count: number;
}

export interface MinuteCount {
  minute: Date;
  started: number;
  finished: number;
}

export interface QueueRow {
  queue: string;
  workflow: string;
  version: string;
  shard: string | null;
  ready: number;
  delayed: number;
  running: number;
  waiting: number;
  oldestReadyAgeMs: number | null;
}

export interface BacklogRow {
  backlog: number;
  oldestAgeMs: number | null;
  deadLetters: number;
}

/**
 * The reads behind GET /v1/stats. Read-only, each one statement on its own snapshot (the numbers of one
 * answer may come from instants milliseconds apart, which a dashboard does not notice). Plans on a database
 * with a million finished runs are in docs/benchmarks.md ("Operators' views").
 */
@Injectable()
export class StatsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Runs created since `since`, by current status. Run ids are UUIDv7, so "created since" is a range of the
   * primary key: no index on created_at to maintain.
   */
  runsSince(since: Date): Promise<RunCount[]> {
    return this.db.query<RunCount>(
      `SELECT workflow, version, status, count(*)::int AS count
         FROM runs WHERE id >= $1::uuid
        GROUP BY workflow, version, status
        ORDER BY workflow, version, status`,
      [uuidv7Floor(since.getTime())],
    );
  }

  /**
   * Per minute from `since` on, the minutes with any: runs created, and runs that ended (runs_finished_at_idx).
   * The empty minutes are filled in by the caller: a generate_series joined here was estimated at millions of
   * rows for a day, which turned JIT compilation on (17 ms of a 51 ms statement).
   */
  throughputSince(since: Date): Promise<MinuteCount[]> {
    return this.db.query<MinuteCount>(
      `SELECT minute, sum(started)::int AS started, sum(finished)::int AS finished
         FROM (SELECT date_trunc('minute', created_at) AS minute, 1 AS started, 0 AS finished FROM runs WHERE id >= $1::uuid
               UNION ALL
               SELECT date_trunc('minute', finished_at), 0, 1 FROM runs WHERE finished_at >= $2) m
        GROUP BY minute`,
      [uuidv7Floor(since.getTime()), since],
    );
  }

  /**
   * Depth of every queue with unfinished runs. Two scans, each on the partial index whose predicate it
   * repeats (runs_ready_idx, runs_idle_claims_idx), so finished runs, however many, are never read.
   */
  queues(): Promise<QueueRow[]> {
    return this.db.query<QueueRow>(
      `SELECT queue, workflow, version, shard,
              count(*) FILTER (WHERE status IN ('queued', 'waiting') AND due_at <= now())::int AS ready,
              count(*) FILTER (WHERE status = 'queued' AND due_at > now())::int AS delayed,
              count(*) FILTER (WHERE status = 'running')::int AS running,
              count(*) FILTER (WHERE status = 'waiting' AND due_at > now())::int AS waiting,
              (extract(epoch FROM now() - min(due_at) FILTER (WHERE status IN ('queued', 'waiting') AND due_at <= now())) * 1000)::float8
                AS "oldestReadyAgeMs"
         FROM (SELECT queue, workflow, version, shard, status, due_at FROM runs WHERE status IN ('queued', 'waiting')
               UNION ALL
               SELECT queue, workflow, version, shard, status, due_at FROM runs WHERE status = 'running') r
        GROUP BY queue, workflow, version, shard
        ORDER BY queue`,
    );
  }

  /** The outbox's due wake-ups (outbox_due_idx) and the dead letters. */
  async backlog(): Promise<BacklogRow> {
    const [row] = await this.db.query<BacklogRow>(
      `SELECT count(*)::int AS backlog,
              (extract(epoch FROM now() - min(next_attempt_at)) * 1000)::float8 AS "oldestAgeMs",
              (SELECT count(*) FROM dead_letters)::int AS "deadLetters"
         FROM outbox WHERE status IN ('pending', 'retry') AND next_attempt_at <= now()`,
    );
    return row;
  }
}
