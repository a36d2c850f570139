import type { RunStatus } from '@nest-durable/common';
import { prepared, type SqlExecutor } from '../database';
import type { RunEntity } from '../entities/run.entity';
import type { TaskEntity } from '../entities/task.entity';
import { uuidv7Floor } from '../ids';

/*
 * The client API's reads of runs: a run, its steps, its history, lists. Each is one statement on its own
 * snapshot and takes no lock (every state change goes through the run store's statements).
 */

/** Columns of `runs` under RunEntity's property names, in every statement here that returns whole runs. */
const RUN_COLUMNS = `id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
  idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt", claimed_by AS "claimedBy", build_id AS "buildId",
  heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt", started_at AS "startedAt",
  finished_at AS "finishedAt", progress, progress_at AS "progressAt", traceparent, tracestate`;

// The run view's two reads are prepared statements: they are on the path of every result a client waits for.

const RUN_BY_ID = prepared('wf_run_by_id', `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`);

/** The run, or undefined if there is none. */
export async function runById(db: SqlExecutor, id: string): Promise<RunEntity | undefined> {
  const [run] = await db.query<RunEntity>(RUN_BY_ID, [id]);
  return run;
}

const TASKS_OF_RUN = prepared(
  'wf_tasks_of_run',
  `SELECT run_id AS "runId", key, kind, seq, name, status, attempts, output, error, wake_at AS "wakeAt", child_id AS "childId",
          created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt", attempt_times AS "attemptTimes"
     FROM tasks WHERE run_id = $1 ORDER BY seq, created_at`,
);

/** A run's steps in the order they were made (found through tasks_pkey: run_id, key). */
export function tasksOfRun(db: SqlExecutor, runId: string): Promise<TaskEntity[]> {
  return db.query<TaskEntity>(TASKS_OF_RUN, [runId]);
}

const RUN_EXISTS = `SELECT 1 FROM runs WHERE id = $1`;

/** Whether the run exists (a primary key probe). */
export async function runExists(db: SqlExecutor, id: string): Promise<boolean> {
  return (await db.query(RUN_EXISTS, [id])).length > 0;
}

/** What GET /v1/runs filters by (its query, decoded), and the bulk cancels and retries (run-selection.sql.ts). */
export interface RunFilterValues {
  workflow?: string;
  version?: string;
  status?: RunStatus;
  idempotencyKey?: string;
  /** Created from this time on (inclusive)... */
  createdAfter?: Date;
  /** ...and before this one (exclusive). */
  createdBefore?: Date;
  /** Every tag named. */
  tag?: Record<string, string> | null;
  /** Ids below this one only (the last id of the previous page). */
  cursor?: string;
}

export interface RunListFilter extends RunFilterValues {
  limit: number;
}

/** The filter's conditions on `runs`, its values $2-$8 (runFilterValues): every one given applies. */
export const RUN_FILTER = `($2::text IS NULL OR workflow = $2) AND ($3::text IS NULL OR version = $3) AND ($4::text IS NULL OR status = $4)
     AND ($5::text IS NULL OR id = (SELECT k.run_id FROM idempotency_keys k WHERE k.workflow = $2 AND k.idempotency_key = $5))
     AND ($6::uuid IS NULL OR id < $6) AND ($7::uuid IS NULL OR id >= $7)
     AND ($8::jsonb IS NULL OR (tags <> '{}' AND tags @> $8::jsonb))`;

/** RUN_FILTER's $2-$8: a creation time range is a range of ids, as is the cursor (the lower of the two upper bounds). */
export function runFilterValues(query: RunFilterValues): unknown[] {
  const before = [query.cursor, query.createdBefore && uuidv7Floor(query.createdBefore.getTime())].filter((id): id is string => !!id).sort()[0];
  return [
    query.workflow ?? null,
    query.version ?? null,
    query.status ?? null,
    query.idempotencyKey ?? null,
    before ?? null,
    query.createdAfter ? uuidv7Floor(query.createdAfter.getTime()) : null,
    query.tag ? JSON.stringify(query.tag) : null,
  ];
}

const LIST_RUNS = `SELECT ${RUN_COLUMNS} FROM runs WHERE ${RUN_FILTER} ORDER BY id DESC LIMIT $1`;

/**
 * Newest first, at most `query.limit`; every filter given applies (`tag`: every tag named; a null `tag`, which
 * matches nothing, is the caller's to answer: it filters nothing here). Ids are time-ordered (UUIDv7), so the cursor is the last id of the
 * previous page and a creation time range is a range of ids: both walk the primary key (or runs_workflow_id_idx
 * with a workflow), never a scan of created_at. An idempotency key comes with its workflow
 * (idempotency_keys' primary key, then the run's). Tags are matched with `@>` on runs_tags_idx, which holds only tagged runs (hence
 * the `<> '{}'`, which lets the planner use it). Sent unnamed, so planned for its values: the filters not
 * given fold away and each form gets the plan of its own.
 */
export function listRuns(db: SqlExecutor, query: RunListFilter): Promise<RunEntity[]> {
  return db.query<RunEntity>(LIST_RUNS, [query.limit, ...runFilterValues(query)]);
}

const RUNS_BY_IDEMPOTENCY_KEYS = `SELECT ${RUN_COLUMNS} FROM runs
   WHERE id IN (SELECT k.run_id FROM unnest($1::text[], $2::text[]) AS q(workflow, idempotency_key)
                  JOIN idempotency_keys k USING (workflow, idempotency_key))`;

/**
 * The runs these idempotency keys (each with its workflow) started: the keys' primary key, then each run's. Through
 * idempotency_keys, not an index of `runs` on the key, which a partitioned `runs` could not keep unique.
 */
export function runsByIdempotencyKeys(db: SqlExecutor, keys: { workflow: string; idempotencyKey: string }[]): Promise<RunEntity[]> {
  return db.query<RunEntity>(RUNS_BY_IDEMPOTENCY_KEYS, [keys.map((key) => key.workflow), keys.map((key) => key.idempotencyKey)]);
}

const PAUSED_QUEUES = `SELECT q.queue FROM unnest($1::text[]) AS q(queue)
    JOIN workflow_controls c ON c.workflow = split_part(q.queue, ':', 1) AND c.version = split_part(q.queue, ':', 2)
   WHERE c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)`;

/** Of these queues, those paused now (their version, or their shard of it). */
export async function pausedQueues(db: SqlExecutor, queues: string[]): Promise<string[]> {
  return (await db.query<{ queue: string }>(PAUSED_QUEUES, [queues])).map((row) => row.queue);
}

/** A transition of a run's history. */
export interface TransitionRow {
  /** Its position, as text (a bigint). */
  id: string;
  from: RunStatus | null;
  to: RunStatus;
  revision: number;
  workerId: string | null;
  at: Date;
}

const TRANSITIONS_AFTER = `SELECT id::text, from_status AS "from", to_status AS "to", revision, worker_id AS "workerId", created_at AS at
    FROM run_transitions t WHERE run_id = $1 AND t.id > $2::bigint ORDER BY t.id LIMIT $3`;

/**
 * The first `limit` transitions of a run after the one with id `after`, oldest first (a range scan of
 * run_transitions_pkey: run_id, id). `t.id`, not `id`: ORDER BY would take the output column, the id as text, where
 * '10' < '9'. Each transition is appended by the statement that changes the run, under the run's row lock, so
 * a run's transitions commit in id order: a page after a given id never misses one that commits later.
 */
export function transitionsAfter(db: SqlExecutor, runId: string, after: string, limit: number): Promise<TransitionRow[]> {
  return db.query<TransitionRow>(TRANSITIONS_AFTER, [runId, after, limit]);
}
