import { prepared, type SqlExecutor } from '../database';
import { type NewRun, type StartedRun, startValues } from './runs-start.sql';

/*
 * Starts that hand their runs to a claim waiting on this coordinator for the runs' queue (see
 * RunControlRepository.start): the start statements of runs-start.sql.ts ($1-$14, and what they return), with
 * $15 the claim's worker, $16 every queue it waits for, $17 the claims' idle time in ms, $18 the worker's build id.
 *
 * Each run due now (by the database's clock too) that flow_hand_off admits (its version has no active control,
 * and the claim's queues no ready run and no idle claim, which the claim would take first) goes in as that claim
 * would leave it: running at revision 1 for the worker (its build id recorded, as a claim records it), with the
 * two transitions a start and a claim append (queued at revision 0, then running). It is claimed in the same commit as its start: it skips the queue, and
 * nobody else is woken for it (the NOTIFY counts only queued runs). The others go in queued, as without a
 * hand-off.
 *
 * Safe under concurrency as a claim is: flow_hand_off takes the version's admission lock shared, so a limit set
 * meanwhile counts the run, and reads after it in a fresh snapshot; whatever it does not admit goes in queued,
 * for the claim's own statement to order.
 */

/** A claim waiting for runs, that a start may hand its run to (RunControlRepository.start). */
export interface HandOffTarget {
  workerId: string;
  /** The worker's build id, recorded on the run handed to it (null: its worker did not send one). */
  buildId: string | null;
  /** Every queue the claim waits for: a ready run or an idle claim in any of them comes first. */
  queues: readonly string[];
  /** A running run whose heartbeat is older than this is one the claim would take over first. */
  claimMinIdleTimeMs: number;
}

const handOffValues = (runs: NewRun[], handedTo: HandOffTarget) => [
  ...startValues(runs),
  handedTo.workerId,
  handedTo.queues,
  handedTo.claimMinIdleTimeMs,
  handedTo.buildId,
];

/** START_RUNS handing what it may to the waiting claim (see above). */
const START_HANDED_RUNS = prepared(
  'wf_start_handed_runs',
  `WITH inserted AS (
    INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags,
                      traceparent, tracestate, revision, claimed_by, build_id, heartbeat_at, started_at)
    SELECT id, workflow, version, queue, shard, CASE WHEN h.admitted THEN 'running' ELSE 'queued' END, input, priority, idempotency_key,
           coalesce(run_at, now()), parent_id, concurrency_key, tags, traceparent, tracestate, CASE WHEN h.admitted THEN 1 ELSE 0 END,
           CASE WHEN h.admitted THEN $15 ELSE NULL END, CASE WHEN h.admitted THEN $18 ELSE NULL END,
           CASE WHEN h.admitted THEN now() ELSE NULL END, CASE WHEN h.admitted THEN now() ELSE NULL END
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                  $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::text[])
           AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags, traceparent, tracestate)
           CROSS JOIN LATERAL (SELECT coalesce(n.run_at, now()) <= now() AND flow_hand_off(n.workflow, n.version, $16::text[], $17) AS admitted) h
    RETURNING *
  ), inserted_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, NULL, 'queued', 0, NULL FROM inserted
    UNION ALL
    SELECT id, 'queued', 'running', revision, claimed_by FROM inserted WHERE status = 'running'
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

/** startRuns, handing each run it may to the waiting claim `handedTo` (inserted running for its worker). */
export async function startHandedRuns(db: SqlExecutor, runs: NewRun[], handedTo: HandOffTarget): Promise<StartedRun[]> {
  return db.query<StartedRun>(START_HANDED_RUNS, handOffValues(runs, handedTo));
}

/** START_HANDED_RUNS writing the outbox rows of the runs it queued, as START_PUBLISHED_RUNS does (runs-start.sql.ts). */
const START_HANDED_PUBLISHED_RUNS = prepared(
  'wf_start_handed_published_runs',
  `WITH inserted AS (
    INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags,
                      traceparent, tracestate, revision, claimed_by, build_id, heartbeat_at, started_at)
    SELECT id, workflow, version, queue, shard, CASE WHEN h.admitted THEN 'running' ELSE 'queued' END, input, priority, idempotency_key,
           coalesce(run_at, now()), parent_id, concurrency_key, tags, traceparent, tracestate, CASE WHEN h.admitted THEN 1 ELSE 0 END,
           CASE WHEN h.admitted THEN $15 ELSE NULL END, CASE WHEN h.admitted THEN $18 ELSE NULL END,
           CASE WHEN h.admitted THEN now() ELSE NULL END, CASE WHEN h.admitted THEN now() ELSE NULL END
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                  $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::text[])
           AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags, traceparent, tracestate)
           CROSS JOIN LATERAL (SELECT coalesce(n.run_at, now()) <= now() AND flow_hand_off(n.workflow, n.version, $16::text[], $17) AS admitted) h
    RETURNING *
  ), inserted_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, NULL, 'queued', 0, NULL FROM inserted
    UNION ALL
    SELECT id, 'queued', 'running', revision, claimed_by FROM inserted WHERE status = 'running'
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

/** startHandedRuns, also writing the outbox rows of the runs it queued (see startPublishedRuns). Its own transaction only. */
export async function startHandedPublishedRuns(db: SqlExecutor, runs: NewRun[], handedTo: HandOffTarget): Promise<StartedRun[]> {
  return db.query<StartedRun>(START_HANDED_PUBLISHED_RUNS, handOffValues(runs, handedTo));
}
