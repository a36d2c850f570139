import type { RegisteredWorkflow, WorkerRegistration, WorkerView } from '@nest-durable/common';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

export type WorkerRow = Omit<WorkerView, 'startedAt' | 'lastSeenAt'> & { startedAt: Date; lastSeenAt: Date };

/** A worker counts as offline after this many of its registration intervals without one. */
export const MISSED_REGISTRATIONS_OFFLINE = 3;
/** Offline workers are listed this long, then their rows are dropped. */
const OFFLINE_KEPT = `interval '1 hour'`;

/**
 * The worker registry's rows. Only registrations write them; they are small (a row per worker, a row
 * per workflow version), so they need no batching.
 */
@Injectable()
export class WorkersRepository {
  constructor(private readonly db: Database) {}

  /**
   * Upserts the worker (online for MISSED_REGISTRATIONS_OFFLINE intervals from now; a worker that was
   * offline starts again) and drops workers offline for an hour. Concurrent registrations of one id
   * (two processes misconfigured with one name) serialise on its row; the last one wins. `declared`:
   * the schedules its code declares (see DeclaredSchedules).
   */
  async upsertWorker(tx: SqlExecutor, id: string, registration: WorkerRegistration, declared: DeclaredScheduleName[]): Promise<void> {
    await tx.query(
      `WITH gone AS (
         DELETE FROM workers WHERE expires_at < now() - ${OFFLINE_KEPT} AND id <> $1
       )
       INSERT INTO workers (id, subscriber, failed_over, concurrency, runs_held, workflows, expires_at, declared_schedules)
       VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond', $8)
       ON CONFLICT (id) DO UPDATE
          SET subscriber = excluded.subscriber, failed_over = excluded.failed_over, concurrency = excluded.concurrency,
              runs_held = excluded.runs_held, workflows = excluded.workflows, expires_at = excluded.expires_at,
              declared_schedules = excluded.declared_schedules,
              last_seen_at = now(), started_at = CASE WHEN workers.expires_at < now() THEN now() ELSE workers.started_at END`,
      [
        id,
        registration.subscriber,
        registration.failedOver,
        registration.concurrency,
        registration.runsHeld,
        JSON.stringify(registration.workflows),
        MISSED_REGISTRATIONS_OFFLINE * registration.intervalMs,
        JSON.stringify(declared),
      ],
    );
  }

  /**
   * Records the workflow versions (new ones inserted; known ones touched at most once a minute, so
   * workers registering every few seconds do not rewrite them). Rows are written in key order, so
   * concurrent registrations of overlapping sets lock them in one order and cannot deadlock.
   */
  async upsertWorkflows(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<void> {
    await tx.query(
      `INSERT INTO workflows (workflow, version)
       SELECT DISTINCT w.name, w.version FROM unnest($1::text[], $2::text[]) AS w(name, version) ORDER BY 1, 2
       ON CONFLICT (workflow, version) DO UPDATE SET last_seen_at = now()
        WHERE workflows.last_seen_at < now() - interval '1 minute'`,
      [workflows.map((w) => w.name), workflows.map((w) => w.version)],
    );
  }

  /** Workers seen within the last hour, online ones first. */
  list(): Promise<WorkerRow[]> {
    return this.db.query<WorkerRow>(
      `SELECT id, subscriber, failed_over AS "failedOver", concurrency, runs_held AS "runsHeld", expires_at > now() AS online,
              started_at AS "startedAt", last_seen_at AS "lastSeenAt", workflows
         FROM workers
        WHERE expires_at > now() - ${OFFLINE_KEPT}
        ORDER BY online DESC, id`,
    );
  }
}

/** A schedule a worker's code declares, as `workers.declared_schedules` lists it. */
export interface DeclaredScheduleName {
  workflow: string;
  version: string;
  name: string;
}
