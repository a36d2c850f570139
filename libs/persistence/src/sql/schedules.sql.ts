import type { ScheduleCatchUp, ScheduleOverlap } from '@nest-durable/common';
import type { SqlExecutor } from '../database';

/*
 * `schedules`: one statement per function; the firing transaction is SchedulesService.fire. A firing, a pause,
 * a resume, a trigger and a delete each lock the schedule's row first (lockSchedule, lockDueSchedule), so they
 * take turns on it.
 */

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

/** The columns of a ScheduleRow, in every statement that returns one. */
const SCHEDULE_COLUMNS = `id, workflow, version, name, cron, interval_ms::float8 AS "intervalMs", coalesce(timezone, 'UTC') AS timezone, input, shard,
  priority, overlap, catch_up AS "catchUp", paused, next_run_at AS "nextRunAt", last_fired_at AS "lastFiredAt",
  last_run_id AS "lastRunId", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** $1…$14 of INSERT_SCHEDULE and UPSERT_DECLARED_SCHEDULE. */
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

const INSERT_SCHEDULE = `INSERT INTO schedules (id, workflow, version, name, cron, interval_ms, timezone, input, shard, priority, overlap, catch_up, paused, next_run_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
  RETURNING ${SCHEDULE_COLUMNS}`;

/** Stores a schedule created through the API (a new id: nothing to conflict with). */
export async function insertSchedule(db: SqlExecutor, schedule: NewSchedule): Promise<ScheduleRow> {
  const [row] = await db.query<ScheduleRow>(INSERT_SCHEDULE, insertParams(schedule));
  return row;
}

const SCHEDULE_BY_ID = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1`;

/** The schedule as committed (a read: no lock). */
export async function findSchedule(db: SqlExecutor, id: string): Promise<ScheduleRow | undefined> {
  const [row] = await db.query<ScheduleRow>(SCHEDULE_BY_ID, [id]);
  return row;
}

const LOCK_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 FOR UPDATE`;

/** Locks the schedule for the rest of the transaction (firings, pauses, triggers and deletes take turns). */
export async function lockSchedule(tx: SqlExecutor, id: string): Promise<ScheduleRow | undefined> {
  const [row] = await tx.query<ScheduleRow>(LOCK_SCHEDULE, [id]);
  return row;
}

const LOCK_DUE_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS}, (extract(epoch FROM now()) * 1000)::float8 AS now FROM schedules
   WHERE id = $1 AND next_run_at <= now() FOR UPDATE SKIP LOCKED`;

/**
 * Locks the schedule if its fire time has come (by the database clock) and it is not paused. SKIP
 * LOCKED: a coordinator firing it now holds it, and once that one commits, next_run_at has moved on
 * (the condition is checked again on the row's latest version), so a second coordinator's timer for
 * the same fire time finds nothing rather than waiting to fire it twice.
 */
export async function lockDueSchedule(tx: SqlExecutor, id: string): Promise<(ScheduleRow & { now: number }) | undefined> {
  const [row] = await tx.query<ScheduleRow & { now: number }>(LOCK_DUE_SCHEDULE, [id]);
  return row;
}

const SCHEDULE_IS_DUE = `SELECT 1 FROM schedules WHERE id = $1 AND next_run_at <= now()`;

/** Whether the schedule's fire time has come (a firing that found it locked asks: still due means another firing holds it). */
export async function isScheduleDue(db: SqlExecutor, id: string): Promise<boolean> {
  return (await db.query(SCHEDULE_IS_DUE, [id])).length > 0;
}

const LIST_SCHEDULES = `SELECT ${SCHEDULE_COLUMNS} FROM schedules
   WHERE ($2::text IS NULL OR workflow = $2) AND ($3::uuid IS NULL OR id < $3)
   ORDER BY id DESC LIMIT $1`;

/** Newest first, optionally of one workflow; the cursor is the last id of the previous page (a read: no lock). */
export function listSchedules(db: SqlExecutor, limit: number, workflow?: string, beforeId?: string): Promise<ScheduleRow[]> {
  return db.query<ScheduleRow>(LIST_SCHEDULES, [limit, workflow ?? null, beforeId ?? null]);
}

const ADVANCE_SCHEDULE = `UPDATE schedules
     SET next_run_at = $2, last_fired_at = coalesce($3, last_fired_at), last_run_id = coalesce($4, last_run_id), updated_at = now()
   WHERE id = $1
  RETURNING ${SCHEDULE_COLUMNS}`;

/**
 * Moves a fired (or triggered) schedule on: its next fire time, and what it fired last. Run in the
 * transaction that locked the row (lockSchedule or lockDueSchedule), so no other firing moves it meanwhile.
 */
export async function advanceSchedule(
  tx: SqlExecutor,
  id: string,
  nextRunAt: Date | null,
  lastFiredAt: Date | null,
  lastRunId: string | null,
): Promise<ScheduleRow> {
  const [row] = await tx.query<ScheduleRow>(ADVANCE_SCHEDULE, [id, nextRunAt, lastFiredAt, lastRunId]);
  return row;
}

const SET_SCHEDULE_PAUSED = `UPDATE schedules SET paused = $2, next_run_at = $3, updated_at = now() WHERE id = $1 RETURNING ${SCHEDULE_COLUMNS}`;

/** Pauses (next fire time null) or resumes (from `nextRunAt`), in the transaction that locked the row. */
export async function setSchedulePaused(tx: SqlExecutor, id: string, nextRunAt: Date | null): Promise<ScheduleRow> {
  const [row] = await tx.query<ScheduleRow>(SET_SCHEDULE_PAUSED, [id, nextRunAt === null, nextRunAt]);
  return row;
}

const DELETE_SCHEDULE = `DELETE FROM schedules WHERE id = $1`;

/** Deletes the schedule (its runs stay), in the transaction that locked the row. */
export async function deleteSchedule(tx: SqlExecutor, id: string): Promise<void> {
  await tx.query(DELETE_SCHEDULE, [id]);
}

const UPSERT_DECLARED_SCHEDULE = `INSERT INTO schedules (id, workflow, version, name, cron, interval_ms, timezone, input, shard, priority, overlap, catch_up, paused, next_run_at)
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
                           excluded.priority, excluded.overlap, excluded.catch_up)`;

/**
 * Creates or changes a schedule declared in code (by workflow, version and name). A change of its
 * timing moves its next fire time to `nextFire`, its first after now (unless it is paused); `paused` applies only when
 * it is created, so a pause through the API survives its workers registering again. A declaration
 * equal to what is stored writes nothing. Two registrations declaring it at once: ON CONFLICT on
 * schedules_declared_idx makes the second wait for the first and then update the row it inserted.
 */
export async function upsertDeclaredSchedule(tx: SqlExecutor, schedule: NewSchedule, nextFire: Date): Promise<void> {
  await tx.query(UPSERT_DECLARED_SCHEDULE, [...insertParams(schedule), nextFire]);
}

const DELETE_UNDECLARED_SCHEDULES = `DELETE FROM schedules s
   WHERE s.workflow = $1 AND s.version = $2 AND s.name IS NOT NULL AND s.name <> ALL($3::text[])
     AND NOT EXISTS (
       SELECT 1 FROM workers w
        WHERE w.expires_at > now()
          AND w.declared_schedules @> jsonb_build_array(jsonb_build_object('workflow', s.workflow, 'version', s.version, 'name', s.name)))`;

/**
 * Deletes the schedules declared in code for this workflow version that neither this registration
 * (`names`) nor any online worker declares (`workers.declared_schedules`, the registering worker's
 * row already written in this transaction): during a rolling deploy, code of one version that
 * declares different schedules does not delete the others' (a few worker rows, each a few names).
 * A worker registering concurrently with a declaration not yet committed may see its schedule
 * deleted here; its next registration creates it again.
 */
export async function deleteUndeclaredSchedules(tx: SqlExecutor, workflow: string, version: string, names: string[]): Promise<void> {
  await tx.query(DELETE_UNDECLARED_SCHEDULES, [workflow, version, names]);
}

const PREVIOUS_RUN_STATUS = `SELECT status FROM runs WHERE id = $1`;

/**
 * The status of the schedule's previous run (undefined if there is none any more), for its overlap policy.
 * Read in the firing's transaction, which holds the schedule's row: no other firing starts a run meanwhile.
 */
export async function previousRunStatus(tx: SqlExecutor, runId: string): Promise<string | undefined> {
  const [row] = await tx.query<{ status: string }>(PREVIOUS_RUN_STATUS, [runId]);
  return row?.status;
}

const RUN_STARTED_WITH_KEY = `SELECT run_id AS id FROM idempotency_keys WHERE workflow = $1 AND idempotency_key = $2`;

/**
 * The run a firing's idempotency key already started (a firing never repeats one, but a trigger's key might).
 * Asked after a start found the key taken: the run that took it committed, so this statement's snapshot sees it.
 */
export async function runStartedWithKey(tx: SqlExecutor, workflow: string, idempotencyKey: string): Promise<string | undefined> {
  const [row] = await tx.query<{ id: string }>(RUN_STARTED_WITH_KEY, [workflow, idempotencyKey]);
  return row?.id;
}
