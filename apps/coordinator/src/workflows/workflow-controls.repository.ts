import type { RegisteredWorkflow, WorkflowLimits, WorkflowView } from '@nest-durable/common';
import { DISPATCHING } from '@app/run-store';
import { RUNS_READY_CHANNEL } from '@app/outbox';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** Most wake-ups written per queue when a version is resumed or its limits change (republish adds the rest later). */
const WAKEUPS_PER_QUEUE = 1_000;

interface ControlRow {
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

/**
 * CTEs (`declared`, `changed`) of the versions whose code-declared limits ($1 workflows, $2 versions, $3
 * concurrency, $4 per key, $5 rate, $6 rate per key) differ from those recorded.
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

/** A control row's fields under ControlRow's names, but for the version's key (`c`: workflow_controls). */
const CONTROL_COLUMNS = `c.paused, c.paused_shards AS "pausedShards",
  c.concurrency, c.concurrency_per_key AS "concurrencyPerKey", c.rate_per_second AS "ratePerSecond",
  c.rate_per_key_per_second AS "ratePerKeyPerSecond", c.api_rate_per_key_per_second AS "apiRatePerKeyPerSecond",
  c.code_rate_per_key_per_second AS "codeRatePerKeyPerSecond",
  c.api_concurrency AS "apiConcurrency", c.api_concurrency_per_key AS "apiConcurrencyPerKey", c.api_rate_per_second AS "apiRatePerSecond",
  c.code_concurrency AS "codeConcurrency", c.code_concurrency_per_key AS "codeConcurrencyPerKey", c.code_rate_per_second AS "codeRatePerSecond",
  (SELECT count(*)::integer FROM runs r WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot) AS running,
  c.updated_at AS "updatedAt"`;

/**
 * The controls of workflow versions (`workflow_controls`): pauses and the limits set through the API.
 * Every change upserts the version's row, which the claim statement locks for as long as it decides
 * (flow_admit), so a change and a claim take turns: a claim sees a pause or a limit entirely or not at all.
 */
@Injectable()
export class WorkflowControlsRepository {
  constructor(private readonly db: Database) {}

  /** Every version known: registered by a worker (the registry's `workflows`) or with controls. */
  list(): Promise<ControlRow[]> {
    return this.db.query<ControlRow>(
      `SELECT v.workflow AS name, v.version, ${CONTROL_COLUMNS}
         FROM (SELECT workflow, version FROM workflows UNION SELECT workflow, version FROM workflow_controls) v
         LEFT JOIN workflow_controls c USING (workflow, version)
        ORDER BY v.workflow, v.version`,
    );
  }

  /**
   * Records the limits workers declare in code (`code_*`) where they differ from what is recorded, and
   * returns the versions changed. Cheap when nothing changed (it runs at every registration): one read
   * of the versions' rows, no write and no lock. A version that declares none and has no row gets none.
   * Rows are written in key order (two registrations cannot deadlock). Workers of one version that
   * declare different limits (a rolling deploy) take turns: the last registration wins.
   */
  async reconcileCode(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<{ workflow: string; version: string }[]> {
    const limit = (field: keyof WorkflowLimits) => workflows.map((w) => w.limits?.[field] ?? null);
    const params = [
      workflows.map((w) => w.name),
      workflows.map((w) => w.version),
      limit('concurrency'),
      limit('concurrencyPerKey'),
      limit('ratePerSecond'),
      limit('ratePerKeyPerSecond'),
    ];
    const changing = await tx.query<{ workflow: string; version: string }>(
      `WITH ${CODE_LIMITS_CHANGED} SELECT workflow, version FROM changed ORDER BY workflow, version`,
      params,
    );
    if (changing.length === 0) return [];
    // The claims in flight first (see lockVersion), then the rows.
    for (const { workflow, version } of changing) await this.lockVersion(tx, workflow, version);
    return tx.query<{ workflow: string; version: string }>(
      `WITH ${CODE_LIMITS_CHANGED}
       INSERT INTO workflow_controls AS c (workflow, version, code_concurrency, code_concurrency_per_key, code_rate_per_second, code_rate_per_key_per_second)
       SELECT * FROM changed ORDER BY workflow, version
       ON CONFLICT (workflow, version) DO UPDATE
          SET code_concurrency = excluded.code_concurrency, code_concurrency_per_key = excluded.code_concurrency_per_key,
              code_rate_per_second = excluded.code_rate_per_second, code_rate_per_key_per_second = excluded.code_rate_per_key_per_second,
              tokens = CASE WHEN c.rate_per_second IS DISTINCT FROM coalesce(c.api_rate_per_second, excluded.code_rate_per_second) THEN NULL ELSE c.tokens END,
              updated_at = now()
       RETURNING workflow, version`,
      params,
    );
  }

  async get(tx: SqlExecutor, name: string, version: string): Promise<ControlRow | undefined> {
    const [row] = await tx.query<ControlRow>(
      `SELECT c.workflow AS name, c.version, ${CONTROL_COLUMNS} FROM workflow_controls c WHERE c.workflow = $1 AND c.version = $2`,
      [name, version],
    );
    return row;
  }

  /** Pauses the version, or one shard of it. */
  async pause(tx: SqlExecutor, name: string, version: string, shard: string | undefined): Promise<void> {
    await tx.query(
      `INSERT INTO workflow_controls (workflow, version, paused, paused_shards)
       VALUES ($1, $2, $3::text IS NULL, CASE WHEN $3::text IS NULL THEN '{}' ELSE ARRAY[$3::text] END)
       ON CONFLICT (workflow, version) DO UPDATE
          SET paused = workflow_controls.paused OR $3::text IS NULL,
              paused_shards = CASE WHEN $3::text IS NULL OR $3::text = ANY (workflow_controls.paused_shards) THEN workflow_controls.paused_shards
                                   ELSE array_append(workflow_controls.paused_shards, $3::text) END,
              updated_at = now()`,
      [name, version, shard ?? null],
    );
  }

  /** Resumes the whole version (every shard), or one shard paused on its own. */
  async resume(tx: SqlExecutor, name: string, version: string, shard: string | undefined): Promise<void> {
    await tx.query(
      `UPDATE workflow_controls
          SET paused = CASE WHEN $3::text IS NULL THEN false ELSE paused END,
              paused_shards = CASE WHEN $3::text IS NULL THEN '{}' ELSE array_remove(paused_shards, $3::text) END,
              updated_at = now()
        WHERE workflow = $1 AND version = $2`,
      [name, version, shard ?? null],
    );
  }

  /**
   * Replaces the limits set through the API (null: none set there). Running runs of the version start
   * holding a slot if it now has a concurrency limit (they count against it); a new rate starts with a
   * full bucket (a new per-key rate refills the keys' buckets from where they are, capped at the new
   * capacity, at the next claim).
   */
  async setApiLimits(tx: SqlExecutor, name: string, version: string, limits: WorkflowLimits): Promise<void> {
    await this.lockVersion(tx, name, version);
    await tx.query(
      `INSERT INTO workflow_controls (workflow, version, api_concurrency, api_concurrency_per_key, api_rate_per_second, api_rate_per_key_per_second)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (workflow, version) DO UPDATE
          SET api_concurrency = excluded.api_concurrency, api_concurrency_per_key = excluded.api_concurrency_per_key,
              api_rate_per_second = excluded.api_rate_per_second, api_rate_per_key_per_second = excluded.api_rate_per_key_per_second,
              tokens = CASE WHEN excluded.api_rate_per_second IS DISTINCT FROM workflow_controls.api_rate_per_second THEN NULL ELSE workflow_controls.tokens END,
              updated_at = now()`,
      [name, version, limits.concurrency ?? null, limits.concurrencyPerKey ?? null, limits.ratePerSecond ?? null, limits.ratePerKeyPerSecond ?? null],
    );
    await this.countRunning(tx, name, version);
  }

  /**
   * Waits for the claims of the version in flight (each holds its advisory lock shared, see flow_admit)
   * and keeps new ones out until this transaction commits, so a limit set now counts every run they took
   * (countRunning, a later statement, sees them). Taken before the version's control row is written: a
   * claim takes the advisory lock first and the row lock after, and so must a change, or the two deadlock.
   */
  async lockVersion(tx: SqlExecutor, name: string, version: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(flow_version_lock($1, $2))`, [name, version]);
  }

  /**
   * Running runs of a version that has a concurrency limit now hold a slot (they were taken before it had
   * one). Call it after lockVersion, in a statement of its own, so it counts the runs of claims in flight.
   */
  async countRunning(tx: SqlExecutor, name: string, version: string): Promise<void> {
    await tx.query(
      `UPDATE runs r SET holds_slot = true
         FROM workflow_controls c
        WHERE c.workflow = $1 AND c.version = $2 AND (c.concurrency IS NOT NULL OR c.concurrency_per_key IS NOT NULL)
          AND r.workflow = $1 AND r.version = $2 AND r.status = 'running' AND NOT r.holds_slot`,
      [name, version],
    );
  }

  /**
   * Wakes the version's queues that have runs waiting (a resume, limits raised or lifted): a NOTIFY per
   * queue for claim long-polls and, with a publisher, up to WAKEUPS_PER_QUEUE outbox wake-ups per queue
   * (Redis workers dropped the wake-ups they could not use while it was paused or full). Reads the
   * version's runs through runs_workflow_id_idx: an operator's command, not a hot path.
   */
  async wake(tx: SqlExecutor, name: string, version: string): Promise<void> {
    await tx.query(
      `WITH waiting AS MATERIALIZED (
         SELECT id, queue, row_number() OVER (PARTITION BY queue ORDER BY priority DESC, due_at) AS k FROM runs
          WHERE workflow = $1 AND version = $2 AND status IN ('queued', 'waiting') AND due_at <= now()
       ), published AS (
         INSERT INTO outbox (run_id, queue)
         SELECT id, queue FROM waiting WHERE k <= $3 AND ${DISPATCHING}
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM (SELECT pg_notify('${RUNS_READY_CHANNEL}', queue) FROM waiting WHERE k = 1) n) AS queues,
              (SELECT count(*) FROM published) AS wakeups`,
      [name, version, WAKEUPS_PER_QUEUE],
    );
  }
}

export function toWorkflowView(row: ControlRow | undefined, name: string, version: string): WorkflowView {
  return {
    name,
    version,
    paused: row?.paused ?? false,
    pausedShards: row?.pausedShards ?? [],
    limits: {
      concurrency: row?.concurrency ?? null,
      concurrencyPerKey: row?.concurrencyPerKey ?? null,
      ratePerSecond: row?.ratePerSecond ?? null,
      ratePerKeyPerSecond: row?.ratePerKeyPerSecond ?? null,
    },
    apiLimits: {
      concurrency: row?.apiConcurrency ?? null,
      concurrencyPerKey: row?.apiConcurrencyPerKey ?? null,
      ratePerSecond: row?.apiRatePerSecond ?? null,
      ratePerKeyPerSecond: row?.apiRatePerKeyPerSecond ?? null,
    },
    codeLimits: {
      concurrency: row?.codeConcurrency ?? null,
      concurrencyPerKey: row?.codeConcurrencyPerKey ?? null,
      ratePerSecond: row?.codeRatePerSecond ?? null,
      ratePerKeyPerSecond: row?.codeRatePerKeyPerSecond ?? null,
    },
    running: row?.running ?? 0,
    updatedAt: row?.updatedAt?.toISOString() ?? null,
  };
}
