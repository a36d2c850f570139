import type { ScheduleCatchUp, ScheduleOverlap } from '@nest-durable/common';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** A row of `schedules` under its view's names (times as Dates, `interval_ms` as a number). */
export interface ScheduleRow {
  id: string;
  workflow: string;
  version: string;
  name: string | null;
  cron: string | null;
  intervalMs: number | null;
  timezone: string;
  input: unknown;
  shard: string | null;
  priority: number;
  overlap: ScheduleOverlap;
  catchUp: ScheduleCatchUp;
  paused: boolean;
  nextRunAt: Date | null;
  lastFiredAt: Date | null;
  lastRunId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a schedule is made of (the API's create, or a declaration in code). */
export type NewSchedule = Omit<ScheduleRow, 'lastFiredAt' | 'lastRunId' | 'createdAt' | 'updatedAt'>;

const COLUMNS = `id, workflow, version, name, cron, interval_ms::float8 AS "intervalMs", coalesce(timezone, 'UTC') AS timezone, input, shard,
  priority, overlap, catch_up AS "catchUp", paused, next_run_at AS "nextRunAt", last_fired_at AS "lastFiredAt",
  last_run_id AS "lastRunId", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** `schedules`: one statement per function; the firing transaction is SchedulesService.fire. */
@Injectable()
export class SchedulesRepository {
  constructor(private readonly db: Database) {}

  /** The database clock at this statement (a schedule's times are in it, like runs' due times). */
  async now(on: SqlExecutor = this.db): Promise<number> {
    const [row] = await on.query<{ now: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`);
    return row.now;
  }

  async insert(schedule: NewSchedule): Promise<ScheduleRow> {
    const [row] = await this.db.query<ScheduleRow>(
      `INSERT INTO schedules (id, workflow, version, name, cron, interval_ms, timezone, input, shard, priority, overlap, catch_up, paused, next_run_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       RETURNING ${COLUMNS}`,
      insertParams(schedule),
    );
    return row;
  }

  async find(id: string, on: SqlExecutor = this.db): Promise<ScheduleRow | undefined> {
    const [row] = await on.query<ScheduleRow>(`SELECT ${COLUMNS} FROM schedules WHERE id = $1`, [id]);
    return row;
  }

  /** Locks the schedule for the rest of the transaction (firings, pauses, triggers and deletes take turns). */
  async lock(tx: SqlExecutor, id: string): Promise<ScheduleRow | undefined> {
    const [row] = await tx.query<ScheduleRow>(`SELECT ${COLUMNS} FROM schedules WHERE id = $1 FOR UPDATE`, [id]);
    return row;
  }

  /**
   * Locks the schedule if its fire time has come (by the database clock) and it is not paused. SKIP
   * LOCKED: a coordinator firing it now holds it, and once that one commits, next_run_at has moved on
   * (the condition is checked again on the row's latest version), so a second coordinator's timer for
   * the same fire time finds nothing rather than waiting to fire it twice.
   */
  async lockDue(tx: SqlExecutor, id: string): Promise<(ScheduleRow & { now: number }) | undefined> {
    const [row] = await tx.query<ScheduleRow & { now: number }>(
      `SELECT ${COLUMNS}, (extract(epoch FROM now()) * 1000)::float8 AS now FROM schedules
        WHERE id = $1 AND next_run_at <= now() FOR UPDATE SKIP LOCKED`,
      [id],
    );
    return row;
  }

  /** Whether the schedule's fire time has come (a firing that found it locked asks: still due means another firing holds it). */
  async isDue(id: string): Promise<boolean> {
    return (await this.db.query(`SELECT 1 FROM schedules WHERE id = $1 AND next_run_at <= now()`, [id])).length > 0;
  }

  /** Newest first, optionally of one workflow; the cursor is the last id of the previous page. */
  list(limit: number, workflow?: string, beforeId?: string): Promise<ScheduleRow[]> {
    return this.db.query<ScheduleRow>(
      `SELECT ${COLUMNS} FROM schedules
        WHERE ($2::text IS NULL OR workflow = $2) AND ($3::uuid IS NULL OR id < $3)
        ORDER BY id DESC LIMIT $1`,
      [limit, workflow ?? null, beforeId ?? null],
    );
  }

  /** Moves a fired (or triggered) schedule on: its next fire time, and what it fired last. */
  async advance(tx: SqlExecutor, id: string, nextRunAt: Date | null, lastFiredAt: Date | null, lastRunId: string | null): Promise<ScheduleRow> {
    const [row] = await tx.query<ScheduleRow>(
      `UPDATE schedules
          SET next_run_at = $2, last_fired_at = coalesce($3, last_fired_at), last_run_id = coalesce($4, last_run_id), updated_at = now()
        WHERE id = $1
       RETURNING ${COLUMNS}`,
      [id, nextRunAt, lastFiredAt, lastRunId],
    );
    return row;
  }

  /** Pauses (next fire time null) or resumes (from `nextRunAt`). */
  async setPaused(tx: SqlExecutor, id: string, nextRunAt: Date | null): Promise<ScheduleRow> {
    const [row] = await tx.query<ScheduleRow>(`UPDATE schedules SET paused = $2, next_run_at = $3, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [
      id,
      nextRunAt === null,
      nextRunAt,
    ]);
    return row;
  }

  async delete(tx: SqlExecutor, id: string): Promise<void> {
    await tx.query(`DELETE FROM schedules WHERE id = $1`, [id]);
  }

  /**
   * Creates or changes a schedule declared in code (by workflow, version and name). A change of its
   * timing moves its next fire time to `nextFire`, its first after now (unless it is paused); `paused` applies only when
   * it is created, so a pause through the API survives its workers registering again. A declaration
   * equal to what is stored writes nothing.
   */
  async upsertDeclared(tx: SqlExecutor, schedule: NewSchedule, nextFire: Date): Promise<void> {
    await tx.query(
      `INSERT INTO schedules (id, workflow, version, name, cron, interval_ms, timezone, input, shard, priority, overlap, catch_up, paused, next_run_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (workflow, version, name) WHERE name IS NOT NULL DO UPDATE
          SET cron = excluded.cron, interval_ms = excluded.interval_ms, timezone = excluded.timezone, input = excluded.input,
              shard = excluded.shard, priority = excluded.priority, overlap = excluded.overlap, catch_up = excluded.catch_up,
              next_run_at = CASE
                WHEN schedules.paused THEN NULL
                WHEN (schedules.cron, schedules.interval_ms, schedules.timezone) IS DISTINCT FROM (excluded.cron, excluded.interval_ms, excluded.timezone)
                  THEN $15::timestamptz
                ELSE schedules.next_run_at END,
              updated_at = now()
        WHERE (schedules.cron, schedules.interval_ms, schedules.timezone, schedules.input, schedules.shard, schedules.priority,
               schedules.overlap, schedules.catch_up)
              IS DISTINCT FROM (excluded.cron, excluded.interval_ms, excluded.timezone, excluded.input, excluded.shard,
                                excluded.priority, excluded.overlap, excluded.catch_up)`,
      [...insertParams(schedule), nextFire],
    );
  }

  /**
   * Deletes the schedules declared in code for this workflow version that neither this registration
   * (`names`) nor any online worker declares (`workers.declared_schedules`, the registering worker's
   * row already written in this transaction): during a rolling deploy, code of one version that
   * declares different schedules does not delete the others' (a few worker rows, each a few names).
   * A worker registering concurrently with a declaration not yet committed may see its schedule
   * deleted here; its next registration creates it again.
   */
  async deleteUndeclared(tx: SqlExecutor, workflow: string, version: string, names: string[]): Promise<void> {
    await tx.query(
      `DELETE FROM schedules s
        WHERE s.workflow = $1 AND s.version = $2 AND s.name IS NOT NULL AND s.name <> ALL($3::text[])
          AND NOT EXISTS (
            SELECT 1 FROM workers w
             WHERE w.expires_at > now()
               AND w.declared_schedules @> jsonb_build_array(jsonb_build_object('workflow', s.workflow, 'version', s.version, 'name', s.name)))`,
      [workflow, version, names],
    );
  }

  /** Whether a worker registered as online hosts this workflow version (the registry's `workers`, a few rows). */
  async hostedOnline(tx: SqlExecutor, workflow: string, version: string): Promise<boolean> {
    const rows = await tx.query(
      `SELECT 1 FROM workers WHERE expires_at > now() AND workflows @> jsonb_build_array(jsonb_build_object('name', $1::text, 'version', $2::text)) LIMIT 1`,
      [workflow, version],
    );
    return rows.length > 0;
  }

  /** The status of the schedule's previous run (undefined if there is none any more). */
  async runStatus(tx: SqlExecutor, runId: string): Promise<string | undefined> {
    const [row] = await tx.query<{ status: string }>(`SELECT status FROM runs WHERE id = $1`, [runId]);
    return row?.status;
  }

  /** The run a firing's idempotency key already started (a firing never repeats one, but a trigger's key might). */
  async runByKey(tx: SqlExecutor, workflow: string, idempotencyKey: string): Promise<string | undefined> {
    const [row] = await tx.query<{ id: string }>(`SELECT id FROM runs WHERE workflow = $1 AND idempotency_key = $2`, [workflow, idempotencyKey]);
    return row?.id;
  }
}

function insertParams(s: NewSchedule): unknown[] {
  return [
    s.id,
    s.workflow,
    s.version,
    s.name,
    s.cron,
    s.intervalMs,
    s.cron === null ? null : s.timezone,
    s.input === null || s.input === undefined ? null : JSON.stringify(s.input),
    s.shard,
    s.priority,
    s.overlap,
    s.catchUp,
    s.paused,
    s.nextRunAt,
  ];
}
