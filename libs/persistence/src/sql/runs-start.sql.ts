import { queueName } from '@nest-durable/common';
import { prepared, type SqlExecutor } from '../database';
import type { RunEntity } from '../entities/run.entity';
import { jsonParam } from './json-param';

/*
 * Starting runs: inserting queued runs (a client's start, a batch, a schedule's firing, a child run) with their
 * first transitions, in one statement. The hand-off forms, which insert a run running for a waiting claim, are in
 * runs-hand-off.sql.ts.
 *
 * Every form inserts the runs given as parallel arrays ($1 ids, $2 workflows, $3 versions, $4 queues, $5 inputs,
 * $6 priorities, $7 idempotency keys, $8 runAt, $9 parent ids, $10 shards, $11 concurrency keys, $12 tags, $13 and $14
 * the W3C trace context (traceparent, tracestate) of the span that started each run; see startValues) as the CTE `inserted`, with their first history rows (in the same statement, so the history
 * cannot miss one). A run whose idempotency key already exists for its workflow is not inserted: the trigger
 * runs_claim_idempotency_key claims each keyed run's key in idempotency_keys first and leaves the run out when it is
 * taken (migration 1767100000000); a concurrent insert of the same key waits for the other to commit, so exactly
 * one run exists. No statement names a unique index of `runs` as its arbiter: a partitioned `runs` could not keep
 * one across its partitions (docs/architecture.md, "The life of a run").
 *
 * It wakes idle claimers with one NOTIFY per queue that got a queued run due now (not one per run; a run handed
 * to a claim is not waiting), delivered at commit, so a woken claimer sees the run.
 *
 * The start statements return the runs inserted, by id, under RunEntity's property names, with `paused`: whether
 * a pause of its version or shard holds it (a primary-key probe of workflow_controls). With their generic plan:
 * PostgreSQL re-planned them on every execution otherwise (about 0.3 ms, against 0.5 ms to run them), since
 * their inputs are arrays whose sizes a custom plan sees.
 *
 * The published forms write their runs' outbox rows themselves rather than leaving them to the enqueue trigger,
 * those due now taken (`in_flight`, one attempt under way, as the enqueuer's batch statement marks them), and
 * return their ids (`outboxId`) for the caller to publish once it committed. The rows are written only when this
 * session's coordinator publishes to a transport (its `wf.dispatch` setting, see PersistenceModule), as the
 * enqueue trigger does. `wf.start_outbox`, set for the transaction (set_config is evaluated for each of those
 * rows, before any trigger fires: AFTER triggers fire at the statement's end), makes the enqueue trigger skip
 * those runs and outbox_notify wake no enqueuer (see the start-publishes migration). Only for a statement that is
 * its transaction: its rows are published after its commit. The outbox rows are joined to the runs, not read by
 * a subquery per run: a batch start inserts up to BATCH_MAX runs.
 */

/** A run to insert. */
export interface NewRun {
  id: string;
  workflow: string;
  version: string;
  /** Routing shard (null: none); the run's queue is built from it. */
  shard: string | null;
  input: unknown;
  priority: number;
  idempotencyKey: string | null;
  runAt: Date | null;
  parentId: string | null;
  /** Runs with the same key share the version's `concurrencyPerKey` slots (null: none). */
  concurrencyKey?: string | null;
  /** Metadata to find the run by (a child gets its parent's unless it names its own). */
  tags: Record<string, string>;
  /** The W3C trace context of the span that started it, handed to the worker that runs it (null: not traced). */
  traceparent: string | null;
  tracestate: string | null;
}

/** A run a start statement inserted: whether a pause holds it, and, when it publishes, its outbox row taken to publish. */
export type StartedRun = RunEntity & { paused: boolean; outboxId?: string | null };

/** Every start statement's $1-$14. */
export function startValues(runs: NewRun[]): unknown[] {
  return [
    runs.map((run) => run.id),
    runs.map((run) => run.workflow),
    runs.map((run) => run.version),
    runs.map((run) => queueName(run.workflow, run.version, run.shard ?? undefined)),
    runs.map((run) => jsonParam(run.input)),
    runs.map((run) => run.priority),
    runs.map((run) => run.idempotencyKey),
    runs.map((run) => run.runAt),
    runs.map((run) => run.parentId),
    runs.map((run) => run.shard),
    runs.map((run) => run.concurrencyKey ?? null),
    runs.map((run) => JSON.stringify(run.tags)),
    runs.map((run) => run.traceparent),
    runs.map((run) => run.tracestate),
  ];
}

/** Inserts queued runs and returns them (see above). */
const START_RUNS = prepared(
  'wf_start_runs',
  `WITH inserted AS (
    INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags, traceparent, tracestate)
    SELECT id, workflow, version, queue, shard, 'queued', input, priority, idempotency_key, coalesce(run_at, now()), parent_id, concurrency_key, tags,
           traceparent, tracestate
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                  $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::text[])
           AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags, traceparent, tracestate)
    RETURNING *
  ), inserted_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, NULL, 'queued', revision, NULL FROM inserted
  ), notified AS (SELECT (SELECT count(*) FROM (
    SELECT pg_notify('wf_runs_ready', queue) FROM (SELECT DISTINCT queue FROM inserted WHERE status = 'queued' AND due_at <= now()) q) n) AS n)
  SELECT id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
         idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt",
         claimed_by AS "claimedBy", build_id AS "buildId", heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt",
         started_at AS "startedAt", finished_at AS "finishedAt", traceparent, tracestate,
         EXISTS (SELECT 1 FROM workflow_controls c
                  WHERE c.workflow = inserted.workflow AND c.version = inserted.version
                    AND (c.paused OR inserted.shard = ANY (c.paused_shards))) AS paused
    FROM inserted CROSS JOIN notified`,
  { genericPlan: true },
);

/** Starts runs: inserts them queued, and returns those inserted (an idempotency key already used leaves its run out). */
export async function startRuns(db: SqlExecutor, runs: NewRun[]): Promise<StartedRun[]> {
  return db.query<StartedRun>(START_RUNS, startValues(runs));
}

/** START_RUNS writing its runs' outbox rows, those due now taken for the caller to publish (see above). */
const START_PUBLISHED_RUNS = prepared(
  'wf_start_published_runs',
  `WITH inserted AS (
    INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags, traceparent, tracestate)
    SELECT id, workflow, version, queue, shard, 'queued', input, priority, idempotency_key, coalesce(run_at, now()), parent_id, concurrency_key, tags,
           traceparent, tracestate
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                  $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::text[])
           AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags, traceparent, tracestate)
    RETURNING *
  ), inserted_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, NULL, 'queued', revision, NULL FROM inserted
  ), outboxed AS (
    INSERT INTO outbox (run_id, queue, next_attempt_at, status, attempt_count)
    SELECT id, queue, greatest(due_at, now()), CASE WHEN due_at <= now() THEN 'in_flight' ELSE 'pending' END, (due_at <= now())::integer
      FROM inserted
     WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity' AND coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')
       AND set_config('wf.start_outbox', 'on', true) = 'on'
    -- Named apart from the runs' columns, which the final SELECT lists unqualified.
    RETURNING id AS outbox_id, run_id AS outbox_run_id, status AS outbox_status
  ), notified AS (SELECT (SELECT count(*) FROM (
    SELECT pg_notify('wf_runs_ready', queue) FROM (SELECT DISTINCT queue FROM inserted WHERE status = 'queued' AND due_at <= now()) q) n) AS n)
  SELECT id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
         idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt",
         claimed_by AS "claimedBy", build_id AS "buildId", heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt",
         started_at AS "startedAt", finished_at AS "finishedAt", traceparent, tracestate,
         EXISTS (SELECT 1 FROM workflow_controls c
                  WHERE c.workflow = inserted.workflow AND c.version = inserted.version
                    AND (c.paused OR inserted.shard = ANY (c.paused_shards))) AS paused, outbox_id::text AS "outboxId"
    FROM inserted CROSS JOIN notified LEFT JOIN outboxed ON outbox_run_id = inserted.id AND outbox_status = 'in_flight'`,
  { genericPlan: true },
);

/** startRuns, also writing the runs' outbox rows (`outboxId`: taken, to publish once committed). Its own transaction only. */
export async function startPublishedRuns(db: SqlExecutor, runs: NewRun[]): Promise<StartedRun[]> {
  return db.query<StartedRun>(START_PUBLISHED_RUNS, startValues(runs));
}

/**
 * A child run, inserted queued like a start's, in the transaction of its parent's step (StepRepository.startChild),
 * which holds the parent's row lock. Its NOTIFY is delivered when that transaction commits.
 */
const INSERT_CHILD_RUN = `WITH inserted AS (
    INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags, traceparent, tracestate)
    SELECT id, workflow, version, queue, shard, 'queued', input, priority, idempotency_key, coalesce(run_at, now()), parent_id, concurrency_key, tags,
           traceparent, tracestate
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                  $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::text[])
           AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags, traceparent, tracestate)
    RETURNING *
  ), inserted_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, NULL, 'queued', revision, NULL FROM inserted
  ) SELECT (SELECT count(*) FROM (
    SELECT pg_notify('wf_runs_ready', queue) FROM (SELECT DISTINCT queue FROM inserted WHERE status = 'queued' AND due_at <= now()) q) n)`;

/** Inserts a child run (see above). */
export async function insertChildRun(db: SqlExecutor, run: NewRun): Promise<void> {
  await db.query(INSERT_CHILD_RUN, startValues([run]));
}
