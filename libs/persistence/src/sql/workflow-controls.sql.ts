import type { RegisteredWorkflow, WorkflowLimits } from '@nest-durable/common';
import type { SqlExecutor } from '../database';

/*
 * The controls of workflow versions (`workflow_controls`): pauses and the limits set through the API or declared
 * in code. Every change upserts the version's row, which the claim statement locks for as long as it decides
 * (flow_admit), so a change and a claim take turns: a claim sees a pause or a limit entirely or not at all.
 */

/** A version's controls under the names of the API's view (see toWorkflowView in the coordinator). */
export interface WorkflowControlRow {
  name: string;
  version: string;
  paused: boolean;
  pausedShards: string[];
  concurrency: number | null;
  concurrencyPerKey: number | null;
  ratePerSecond: number | null;
  ratePerKeyPerSecond: number | null;
  apiConcurrency: number | null;
  apiConcurrencyPerKey: number | null;
  apiRatePerSecond: number | null;
  apiRatePerKeyPerSecond: number | null;
  codeConcurrency: number | null;
  codeConcurrencyPerKey: number | null;
  codeRatePerSecond: number | null;
  codeRatePerKeyPerSecond: number | null;
  running: number;
  updatedAt: Date | null;
}

/** A control row's fields under WorkflowControlRow's names, but for the version's key (`c`: workflow_controls). */
const CONTROL_COLUMNS = `c.paused, c.paused_shards AS "pausedShards",
  c.concurrency, c.concurrency_per_key AS "concurrencyPerKey", c.rate_per_second AS "ratePerSecond",
  c.rate_per_key_per_second AS "ratePerKeyPerSecond", c.api_rate_per_key_per_second AS "apiRatePerKeyPerSecond",
  c.code_rate_per_key_per_second AS "codeRatePerKeyPerSecond",
  c.api_concurrency AS "apiConcurrency", c.api_concurrency_per_key AS "apiConcurrencyPerKey", c.api_rate_per_second AS "apiRatePerSecond",
  c.code_concurrency AS "codeConcurrency", c.code_concurrency_per_key AS "codeConcurrencyPerKey", c.code_rate_per_second AS "codeRatePerSecond",
  (SELECT count(*)::integer FROM runs r WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot) AS running,
  c.updated_at AS "updatedAt"`;

const LIST_WORKFLOW_CONTROLS = `SELECT v.workflow AS name, v.version, ${CONTROL_COLUMNS}
    FROM (SELECT workflow, version FROM workflows UNION SELECT workflow, version FROM workflow_controls) v
    LEFT JOIN workflow_controls c USING (workflow, version)
   ORDER BY v.workflow, v.version`;

/** Every version known: registered by a worker (the registry's `workflows`) or with controls (a read: no lock). */
export function listWorkflowControls(db: SqlExecutor): Promise<WorkflowControlRow[]> {
  return db.query<WorkflowControlRow>(LIST_WORKFLOW_CONTROLS);
}

const WORKFLOW_CONTROL = `SELECT c.workflow AS name, c.version, ${CONTROL_COLUMNS} FROM workflow_controls c WHERE c.workflow = $1 AND c.version = $2`;

/** The version's controls (undefined: it never had any), read after a change in the change's transaction. */
export async function findWorkflowControl(tx: SqlExecutor, name: string, version: string): Promise<WorkflowControlRow | undefined> {
  const [row] = await tx.query<WorkflowControlRow>(WORKFLOW_CONTROL, [name, version]);
  return row;
}

/**
 * CTEs (`declared`, `changed`) of the versions whose code-declared limits ($1 workflows, $2 versions, $3
 * concurrency, $4 per key, $5 rate, $6 rate per key) differ from those recorded: the one rule of
 * CHANGED_CODE_LIMITS and RECORD_CODE_LIMITS, which must agree.
 */
const CODE_LIMITS_CHANGED = `declared AS (
    SELECT DISTINCT ON (d.workflow, d.version) d.* FROM unnest($1::text[], $2::text[], $3::integer[], $4::integer[], $5::float8[], $6::float8[])
           AS d(workflow, version, concurrency, concurrency_per_key, rate_per_second, rate_per_key_per_second)
  ), changed AS (
    SELECT d.* FROM declared d LEFT JOIN workflow_controls c USING (workflow, version)
     WHERE CASE WHEN c.workflow IS NULL THEN coalesce(d.concurrency, d.concurrency_per_key, d.rate_per_second, d.rate_per_key_per_second) IS NOT NULL
                ELSE (c.code_concurrency, c.code_concurrency_per_key, c.code_rate_per_second, c.code_rate_per_key_per_second)
                     IS DISTINCT FROM (d.concurrency, d.concurrency_per_key, d.rate_per_second, d.rate_per_key_per_second) END
  )`;

/** $1…$6 of CODE_LIMITS_CHANGED. */
function codeLimitParams(workflows: RegisteredWorkflow[]): unknown[] {
  const limit = (field: keyof WorkflowLimits) => workflows.map((w) => w.limits?.[field] ?? null);
  return [
    workflows.map((w) => w.name),
    workflows.map((w) => w.version),
    limit('concurrency'),
    limit('concurrencyPerKey'),
    limit('ratePerSecond'),
    limit('ratePerKeyPerSecond'),
  ];
}

const CHANGED_CODE_LIMITS = `WITH ${CODE_LIMITS_CHANGED} SELECT workflow, version FROM changed ORDER BY workflow, version`;

/**
 * The versions whose limits declared in code differ from those recorded. Cheap when nothing changed (it
 * runs at every registration): one read of the versions' rows, no write and no lock. A version that
 * declares none and has no row is not among them.
 */
export function changedCodeLimits(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<{ workflow: string; version: string }[]> {
  return tx.query<{ workflow: string; version: string }>(CHANGED_CODE_LIMITS, codeLimitParams(workflows));
}

const RECORD_CODE_LIMITS = `WITH ${CODE_LIMITS_CHANGED}
  INSERT INTO workflow_controls AS c (workflow, version, code_concurrency, code_concurrency_per_key, code_rate_per_second, code_rate_per_key_per_second)
  SELECT * FROM changed ORDER BY workflow, version
  ON CONFLICT (workflow, version) DO UPDATE
     SET code_concurrency = excluded.code_concurrency, code_concurrency_per_key = excluded.code_concurrency_per_key,
         code_rate_per_second = excluded.code_rate_per_second, code_rate_per_key_per_second = excluded.code_rate_per_key_per_second,
         tokens = CASE WHEN c.rate_per_second IS DISTINCT FROM coalesce(c.api_rate_per_second, excluded.code_rate_per_second) THEN NULL ELSE c.tokens END,
         updated_at = now()
  RETURNING workflow, version`;

/**
 * Records the limits workers declare in code (`code_*`) where they differ from what is recorded, and returns
 * the versions changed (a new rate starts with a full bucket). Rows are written in key order (two
 * registrations cannot deadlock). Workers of one version that declare different limits (a rolling deploy)
 * take turns: the last registration wins. Take the versions' locks first (lockFlowVersion).
 */
export function recordCodeLimits(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<{ workflow: string; version: string }[]> {
  return tx.query<{ workflow: string; version: string }>(RECORD_CODE_LIMITS, codeLimitParams(workflows));
}

const PAUSE_WORKFLOW = `INSERT INTO workflow_controls (workflow, version, paused, paused_shards)
  VALUES ($1, $2, $3::text IS NULL, CASE WHEN $3::text IS NULL THEN '{}' ELSE ARRAY[$3::text] END)
  ON CONFLICT (workflow, version) DO UPDATE
     SET paused = workflow_controls.paused OR $3::text IS NULL,
         paused_shards = CASE WHEN $3::text IS NULL OR $3::text = ANY (workflow_controls.paused_shards) THEN workflow_controls.paused_shards
                              ELSE array_append(workflow_controls.paused_shards, $3::text) END,
         updated_at = now()`;

/**
 * Pauses the version, or one shard of it. An upsert (ON CONFLICT on the version's key): two pauses at once
 * serialise on the row, and each adds its shard to what the other left.
 */
export async function pauseWorkflow(tx: SqlExecutor, name: string, version: string, shard: string | undefined): Promise<void> {
  await tx.query(PAUSE_WORKFLOW, [name, version, shard ?? null]);
}

const RESUME_WORKFLOW = `UPDATE workflow_controls
     SET paused = CASE WHEN $3::text IS NULL THEN false ELSE paused END,
         paused_shards = CASE WHEN $3::text IS NULL THEN '{}' ELSE array_remove(paused_shards, $3::text) END,
         updated_at = now()
   WHERE workflow = $1 AND version = $2`;

/** Resumes the whole version (every shard), or one shard paused on its own (the row lock orders it with pauses). */
export async function resumeWorkflow(tx: SqlExecutor, name: string, version: string, shard: string | undefined): Promise<void> {
  await tx.query(RESUME_WORKFLOW, [name, version, shard ?? null]);
}

const SET_API_LIMITS = `INSERT INTO workflow_controls (workflow, version, api_concurrency, api_concurrency_per_key, api_rate_per_second, api_rate_per_key_per_second)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (workflow, version) DO UPDATE
     SET api_concurrency = excluded.api_concurrency, api_concurrency_per_key = excluded.api_concurrency_per_key,
         api_rate_per_second = excluded.api_rate_per_second, api_rate_per_key_per_second = excluded.api_rate_per_key_per_second,
         tokens = CASE WHEN excluded.api_rate_per_second IS DISTINCT FROM workflow_controls.api_rate_per_second THEN NULL ELSE workflow_controls.tokens END,
         updated_at = now()`;

/**
 * Replaces the limits set through the API (null: none set there). A new rate starts with a full bucket (a new
 * per-key rate refills the keys' buckets from where they are, capped at the new capacity, at the next claim).
 * Take the version's lock first (lockFlowVersion), and count its running runs after (countRunningSlots).
 */
export async function setApiLimits(tx: SqlExecutor, name: string, version: string, limits: WorkflowLimits): Promise<void> {
  await tx.query(SET_API_LIMITS, [
    name,
    version,
    limits.concurrency ?? null,
    limits.concurrencyPerKey ?? null,
    limits.ratePerSecond ?? null,
    limits.ratePerKeyPerSecond ?? null,
  ]);
}

const LOCK_FLOW_VERSION = `SELECT pg_advisory_xact_lock(flow_version_lock($1, $2))`;

/**
 * Waits for the claims of the version in flight (each holds its advisory lock shared, see flow_admit)
 * and keeps new ones out until this transaction commits, so a limit set now counts every run they took
 * (countRunningSlots, a later statement, sees them). Taken before the version's control row is written: a
 * claim takes the advisory lock first and the row lock after, and so must a change, or the two deadlock.
 */
export async function lockFlowVersion(tx: SqlExecutor, name: string, version: string): Promise<void> {
  await tx.query(LOCK_FLOW_VERSION, [name, version]);
}

const COUNT_RUNNING_SLOTS = `UPDATE runs r SET holds_slot = true
    FROM workflow_controls c
   WHERE c.workflow = $1 AND c.version = $2 AND (c.concurrency IS NOT NULL OR c.concurrency_per_key IS NOT NULL)
     AND r.workflow = $1 AND r.version = $2 AND r.status = 'running' AND NOT r.holds_slot`;

/**
 * Running runs of a version that has a concurrency limit now hold a slot (they were taken before it had
 * one). Call it after lockFlowVersion, in a statement of its own, so it counts the runs of claims in flight.
 */
export async function countRunningSlots(tx: SqlExecutor, name: string, version: string): Promise<void> {
  await tx.query(COUNT_RUNNING_SLOTS, [name, version]);
}

const WAKE_WORKFLOW_QUEUES = `WITH waiting AS MATERIALIZED (
    SELECT id, queue, row_number() OVER (PARTITION BY queue ORDER BY priority DESC, due_at) AS k FROM runs
     WHERE workflow = $1 AND version = $2 AND status IN ('queued', 'waiting') AND due_at <= now()
  ), published AS (
    INSERT INTO outbox (run_id, queue)
    SELECT id, queue FROM waiting WHERE k <= $3 AND coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM waiting WHERE k = 1) n) AS queues,
         (SELECT count(*) FROM published) AS wakeups`;

/** Most wake-ups written per queue when a version is resumed or its limits change (republish adds the rest later). */
export const WAKEUPS_PER_QUEUE = 1_000;

/**
 * Wakes the version's queues that have runs waiting (a resume, limits raised or lifted): a NOTIFY on
 * wf_runs_ready per queue for claim long-polls and, when this session's coordinator publishes (its
 * `wf.dispatch`), up to WAKEUPS_PER_QUEUE outbox wake-ups per queue (Redis workers dropped the wake-ups they
 * could not use while it was paused or full). Both reach others at commit, with the change that makes the
 * runs takeable. Reads the version's runs through runs_workflow_id_idx: an operator's command, not a hot path.
 */
export async function wakeWorkflowQueues(tx: SqlExecutor, name: string, version: string): Promise<void> {
  await tx.query(WAKE_WORKFLOW_QUEUES, [name, version, WAKEUPS_PER_QUEUE]);
}
