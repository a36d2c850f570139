import type { RegisteredWorkflow, WorkerRegistration, WorkerView } from '@nest-durable/common';
import type { SqlExecutor } from '../database';

/*
 * The worker registry's rows (`workers`, `workflows`). Only registrations write them; they are small (a row per
 * worker, a row per workflow version), so they need no batching. Offline workers are listed for an hour, then
 * their rows are dropped (the `interval '1 hour'` of UPSERT_WORKER and LIST_WORKERS).
 */

export type WorkerRow = Omit<WorkerView, 'startedAt' | 'lastSeenAt'> & { startedAt: Date; lastSeenAt: Date };

/** A schedule a worker's code declares, as `workers.declared_schedules` lists it. */
export interface DeclaredScheduleName {
  workflow: string;
  version: string;
  name: string;
}

/** A worker counts as offline after this many of its registration intervals without one. */
export const MISSED_REGISTRATIONS_OFFLINE = 3;

const UPSERT_WORKER = `WITH gone AS (
    DELETE FROM workers WHERE expires_at < now() - interval '1 hour' AND id <> $1
  )
  INSERT INTO workers (id, subscriber, failed_over, concurrency, runs_held, workflows, expires_at, declared_schedules, build_id)
  VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond', $8, $9)
  ON CONFLICT (id) DO UPDATE
     SET subscriber = excluded.subscriber, failed_over = excluded.failed_over, concurrency = excluded.concurrency,
         runs_held = excluded.runs_held, workflows = excluded.workflows, expires_at = excluded.expires_at,
         declared_schedules = excluded.declared_schedules, build_id = excluded.build_id,
         last_seen_at = now(), started_at = CASE WHEN workers.expires_at < now() THEN now() ELSE workers.started_at END`;

/**
 * Upserts the worker (online for MISSED_REGISTRATIONS_OFFLINE intervals from now; a worker that was
 * offline starts again) and drops workers offline for an hour. Concurrent registrations of one id
 * (two processes misconfigured with one name) serialise on its row; the last one wins. `declared`:
 * the schedules its code declares (see DeclaredSchedules). A registration without a build id (an older worker)
 * leaves it null.
 */
export async function upsertWorker(tx: SqlExecutor, id: string, registration: WorkerRegistration, declared: DeclaredScheduleName[]): Promise<void> {
  await tx.query(UPSERT_WORKER, [
    id,
    registration.subscriber,
    registration.failedOver,
    registration.concurrency,
    registration.runsHeld,
    JSON.stringify(registration.workflows),
    MISSED_REGISTRATIONS_OFFLINE * registration.intervalMs,
    JSON.stringify(declared),
    registration.buildId ?? null,
  ]);
}

const UPSERT_WORKFLOW_VERSIONS = `INSERT INTO workflows (workflow, version)
  SELECT DISTINCT w.name, w.version FROM unnest($1::text[], $2::text[]) AS w(name, version) ORDER BY 1, 2
  ON CONFLICT (workflow, version) DO UPDATE SET last_seen_at = now()
   WHERE workflows.last_seen_at < now() - interval '1 minute'`;

/**
 * Records the workflow versions (new ones inserted; known ones touched at most once a minute, so
 * workers registering every few seconds do not rewrite them). Rows are written in key order, so
 * concurrent registrations of overlapping sets lock them in one order and cannot deadlock.
 */
export async function upsertWorkflowVersions(tx: SqlExecutor, workflows: Pick<RegisteredWorkflow, 'name' | 'version'>[]): Promise<void> {
  await tx.query(UPSERT_WORKFLOW_VERSIONS, [workflows.map((w) => w.name), workflows.map((w) => w.version)]);
}

const LIST_WORKERS = `SELECT id, build_id AS "buildId", subscriber, failed_over AS "failedOver", concurrency, runs_held AS "runsHeld", expires_at > now() AS online,
         started_at AS "startedAt", last_seen_at AS "lastSeenAt", workflows
    FROM workers
   WHERE expires_at > now() - interval '1 hour'
   ORDER BY online DESC, id`;

/** Workers seen within the last hour, online ones first (a read: no lock). */
export function listWorkers(db: SqlExecutor): Promise<WorkerRow[]> {
  return db.query<WorkerRow>(LIST_WORKERS);
}

const HOSTED_ONLINE = `SELECT 1 FROM workers
   WHERE expires_at > now() AND workflows @> jsonb_build_array(jsonb_build_object('name', $1::text, 'version', $2::text)) LIMIT 1`;

/**
 * Whether a worker registered as online hosts this workflow version (the registry's `workers`, a few rows).
 * A read in its own snapshot: a worker registering at that moment is seen at its next registration.
 */
export async function hostedOnline(tx: SqlExecutor, workflow: string, version: string): Promise<boolean> {
  return (await tx.query(HOSTED_ONLINE, [workflow, version])).length > 0;
}
