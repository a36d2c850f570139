import { RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import { queueName } from '@nest-durable/common';

/**
 * SQL fragments shared by the statements that change a run's state, so each rule is written once.
 * They are CTE bodies or expressions meant to be embedded in one atomic statement.
 */

/** Columns of `runs` under RunEntity's property names, for statements that return whole runs. */
export const RUN_COLUMNS = `id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
  idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt", claimed_by AS "claimedBy",
  heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt", started_at AS "startedAt",
  finished_at AS "finishedAt"`;

/** Columns returned for a stored step (see StoredTask). */
export const STEP_COLUMNS = `key, kind, seq, status, attempts, output, error`;

/**
 * Appends one history row per row of `source` (a CTE with id, revision and the given columns).
 * Used by every transition so the history cannot miss one.
 */
export function appendHistory(source: string, from: string, to: string, worker = 'NULL'): string {
  return `INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
          SELECT id, ${from}, ${to}, revision, ${worker} FROM ${source}`;
}

/**
 * The body of a MATERIALIZED CTE that locks, in id order, the runs of `source` (rows with run_id and
 * revision; repeats allowed) still running at that revision, and yields their id and revision. Each
 * run is looked up by its id in a LATERAL subquery (never flattened: it holds a row lock), so the plan
 * probes the primary key per run (or, in a table planned while a few pages, reads those pages), never the
 * running runs' index, whatever the statistics say of it: joined to the input instead, the generic
 * plan of a database planned small or never analyzed scanned every entry of `runs_idle_claims_idx`
 * (`status = 'running'`, dead entries included until a vacuum), 0.22 ms at a few thousand (EXPLAIN in
 * docs/benchmarks.md). The nested loop takes the locks in its sorted outer order: id order, as every
 * statement that locks several runs does, so two of them cannot deadlock.
 */
export function lockRunning(source: string): string {
  return `SELECT r.id, r.revision
            FROM (SELECT DISTINCT run_id, revision FROM ${source} ORDER BY run_id, revision) i
            CROSS JOIN LATERAL (SELECT id, revision FROM runs
                                 WHERE id = i.run_id AND revision = i.revision AND status = 'running'
                                   FOR UPDATE) r`;
}

/**
 * True when this session's coordinator publishes to a transport (its `wf.dispatch` setting, see
 * PersistenceModule): outbox rows are written only then, as the enqueue trigger does.
 */
export const DISPATCHING = `coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')`;

/** NOTIFY for each row of `source` (a CTE with `queue`): wakes claimers of those queues at commit. */
export function notifyReady(source: string): string {
  return `(SELECT count(*) FROM (SELECT pg_notify('${RUNS_READY_CHANNEL}', queue) FROM ${source}) n)`;
}

/** NOTIFY for each row of `source` (a CTE with `id`): wakes result long-polls at commit. */
export function notifyFinished(source: string): string {
  return `(SELECT count(*) FROM (SELECT pg_notify('${RUN_FINISHED_CHANNEL}', id::text) FROM ${source}) n)`;
}

/**
 * Two CTEs (`parent_steps`, `woken_parents`) that hand the outcome of ended child runs to parents
 * waiting on them: the parent's child step resolves with the child's status and output, and the
 * parent becomes due now. `ended` must have id, parent_id, status, output, error. Parents listed in
 * `except` (a CTE with `id`) are left alone: the same statement changes them otherwise (a claim that
 * takes a parent whose child wait timed out resolves that step itself), and one statement must not
 * update a row twice.
 */
export function wakeParents(ended: string, except?: string): string {
  return `parent_steps AS (
         UPDATE tasks t
            SET status = 'completed',
                output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                            'output', e.output, 'error', e.error)
           FROM ${ended} e
          WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
            AND t.kind = 'child' AND t.status = 'waiting'${
              except
                ? `
            AND e.parent_id NOT IN (SELECT id FROM ${except})`
                : ''
            }
         RETURNING t.run_id
       ), woken_parents AS (
         UPDATE runs p SET due_at = now(), updated_at = now()
           FROM parent_steps s
          WHERE p.id = s.run_id AND p.status = 'waiting'
         RETURNING p.id, p.queue
       )`;
}

/**
 * The error of a run the engine failed because the workers that took it kept stopping without
 * finishing (reason `stalled`); `message` is a SQL text expression.
 */
export function stalledError(message: string): string {
  return `jsonb_build_object('name', 'RunStalledError', 'reason', 'stalled', 'message', ${message})`;
}

/** Condition on the steps (table alias `alias`) a failed attempt leaves behind that must run again on the next attempt. */
export function stepsToRerun(alias: string): string {
  return `(${alias}.status = 'failed' OR ${alias}.kind = 'retry')`;
}

/** A run to insert (see insertRuns). */
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
}

/**
 * Inserts queued runs given as parallel arrays ($1 ids, $2 workflows, $3 versions, $4 queues,
 * $5 inputs, $6 priorities, $7 idempotency keys, $8 runAt, $9 parent ids, $10 shards, $11 concurrency keys, $12 tags; see insertRunsParams)
 * as the CTE `inserted`, with their first history rows. A run whose idempotency key already exists
 * for its workflow is not inserted; a concurrent insert of the same key waits for the other to
 * commit, so exactly one run exists.
 *
 * With `handOff`, each run that flow_hand_off admits for the claim of worker $13, waiting for queues $14
 * (idle claims: older than $15 ms), goes in as that claim would leave it: running at revision 1 for the
 * worker, with the two transitions a start and a claim append (queued at revision 0, then running). The
 * others go in queued, as without it. See RunControlRepository.start.
 */
function insertRuns(handOff: boolean): string {
  const admitted = (value: string, otherwise: string) => `CASE WHEN h.admitted THEN ${value} ELSE ${otherwise} END`;
  const claim = handOff
    ? {
        columns: ', revision, claimed_by, heartbeat_at, started_at',
        values: `, ${admitted('1', '0')}, ${admitted('$13', 'NULL')}, ${admitted('now()', 'NULL')}, ${admitted('now()', 'NULL')}`,
        status: admitted(`'running'`, `'queued'`),
        // Due now by the database's clock too, and admitted by flow control and the claim's queues.
        admission: `
                CROSS JOIN LATERAL (SELECT coalesce(n.run_at, now()) <= now() AND flow_hand_off(n.workflow, n.version, $14::text[], $15) AS admitted) h`,
        history: `INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
          SELECT id, NULL, 'queued', 0, NULL FROM inserted
          UNION ALL
          SELECT id, 'queued', 'running', revision, claimed_by FROM inserted WHERE status = 'running'`,
      }
    : { columns: '', values: '', status: `'queued'`, admission: '', history: appendHistory('inserted', 'NULL', `'queued'`) };
  return `inserted AS (
         INSERT INTO runs (id, workflow, version, queue, shard, status, input, priority, idempotency_key, due_at, parent_id, concurrency_key, tags${claim.columns})
         SELECT id, workflow, version, queue, shard, ${claim.status}, input, priority, idempotency_key, coalesce(run_at, now()), parent_id, concurrency_key, tags${claim.values}
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::text[],
                       $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::jsonb[])
                AS n(id, workflow, version, queue, input, priority, idempotency_key, run_at, parent_id, shard, concurrency_key, tags)${claim.admission}
         ON CONFLICT (workflow, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING *
       ), inserted_history AS (
         ${claim.history}
       )`;
}

export const INSERT_RUNS = insertRuns(false);

/** INSERT_RUNS handing what it may to a waiting claim ($13 its worker, $14 its queues, $15 the idle time in ms). */
export const INSERT_RUNS_HANDED = insertRuns(true);

/** One NOTIFY per queue that got a queued run due now (not one per run; a run handed to a claim is not waiting). */
export const NOTIFY_INSERTED_QUEUES = `(SELECT count(*) FROM (
         SELECT pg_notify('${RUNS_READY_CHANNEL}', queue) FROM (SELECT DISTINCT queue FROM inserted WHERE status = 'queued' AND due_at <= now()) q) n)`;

export function insertRunsParams(runs: NewRun[]): unknown[] {
  return [
    runs.map((run) => run.id),
    runs.map((run) => run.workflow),
    runs.map((run) => run.version),
    runs.map((run) => queueName(run.workflow, run.version, run.shard ?? undefined)),
    runs.map((run) => json(run.input)),
    runs.map((run) => run.priority),
    runs.map((run) => run.idempotencyKey),
    runs.map((run) => run.runAt),
    runs.map((run) => run.parentId),
    runs.map((run) => run.shard),
    runs.map((run) => run.concurrencyKey ?? null),
    runs.map((run) => JSON.stringify(run.tags)),
  ];
}

/**
 * node-postgres sends a JS array as a PostgreSQL array and a string as text; jsonb parameters
 * are therefore always passed pre-serialised.
 */
export function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
