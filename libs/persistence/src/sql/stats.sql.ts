import type { RunStatus } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { uuidv7Floor } from '../ids';

/*
 * The reads behind GET /v1/stats. Read-only, each one statement on its own snapshot (the numbers of one
 * answer may come from instants milliseconds apart, which a dashboard does not notice); none takes a lock.
 * Plans on a database with a million finished runs are in docs/benchmarks.md ("Operators' views").
 */

export interface RunCount {
  workflow: string;
  version: string;
  status: RunStatus;
  count: number;
}

const RUNS_SINCE = `SELECT workflow, version, status, count(*)::int AS count
    FROM runs WHERE id >= $1::uuid
   GROUP BY workflow, version, status
   ORDER BY workflow, version, status`;

/**
 * Runs created since `since`, by current status. Run ids are UUIDv7, so "created since" is a range of the
 * primary key: no index on created_at to maintain.
 */
export function runsSince(db: SqlExecutor, since: Date): Promise<RunCount[]> {
  return db.query<RunCount>(RUNS_SINCE, [uuidv7Floor(since.getTime())]);
}

export interface MinuteCount {
  minute: Date;
  started: number;
  finished: number;
}

const THROUGHPUT_SINCE = `SELECT minute, sum(started)::int AS started, sum(finished)::int AS finished
    FROM (SELECT date_trunc('minute', created_at) AS minute, 1 AS started, 0 AS finished FROM runs WHERE id >= $1::uuid
          UNION ALL
          SELECT date_trunc('minute', finished_at), 0, 1 FROM runs WHERE finished_at >= $2) m
   GROUP BY minute`;

/**
 * Per minute from `since` on, the minutes with any: runs created, and runs that ended (runs_finished_at_idx).
 * The empty minutes are filled in by the caller: a generate_series joined here was estimated at millions of
 * rows for a day, which turned JIT compilation on (17 ms of a 51 ms statement).
 */
export function throughputSince(db: SqlExecutor, since: Date): Promise<MinuteCount[]> {
  return db.query<MinuteCount>(THROUGHPUT_SINCE, [uuidv7Floor(since.getTime()), since]);
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

const QUEUE_DEPTHS = `SELECT queue, workflow, version, shard,
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
   ORDER BY queue`;

/**
 * Depth of every queue with unfinished runs. Two scans, each on the partial index whose predicate it
 * repeats (runs_ready_idx, runs_idle_claims_idx), so finished runs, however many, are never read.
 */
export function queueDepths(db: SqlExecutor): Promise<QueueRow[]> {
  return db.query<QueueRow>(QUEUE_DEPTHS);
}

export interface BacklogRow {
  backlog: number;
  oldestAgeMs: number | null;
  deadLetters: number;
}

const DISPATCH_BACKLOG = `SELECT count(*)::int AS backlog,
         (extract(epoch FROM now() - min(next_attempt_at)) * 1000)::float8 AS "oldestAgeMs",
         (SELECT count(*) FROM dead_letters)::int AS "deadLetters"
    FROM outbox WHERE status IN ('pending', 'retry') AND next_attempt_at <= now()`;

/** The outbox's due wake-ups (outbox_due_idx) and the dead letters. */
export async function dispatchBacklog(db: SqlExecutor): Promise<BacklogRow> {
  const [row] = await db.query<BacklogRow>(DISPATCH_BACKLOG);
  return row;
}
