import {
  ClaimedRun,
  ErrorDetails,
  JsonValue,
  RevisionConflictError,
  RunNotFoundError,
  StoredTask,
  TaskResultRequest,
} from '@app/contracts';
import { RUN_FINISHED_CHANNEL } from '@app/outbox';
import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';

export interface ClaimParams {
  queues: string[];
  limit: number;
  workerId: string;
  /** A running run whose last heartbeat is older than this (by the database clock) is taken over. */
  claimMinIdleTimeMs: number;
}

/**
 * Claims and every write a worker makes under a claim. Each method is one SQL statement, so
 * the revision check, the increment and the update are atomic, and a worker that lost its claim
 * (stolen after going idle, or the run was cancelled) can change nothing.
 */
@Injectable()
export class RunLeaseRepository {
  constructor(private readonly db: Database) {}

  /**
   * Takes up to `limit` runs: first running runs whose claim went idle (their worker is presumed
   * dead), then due queued runs, highest priority first, oldest due first.
   *
   * Safe under concurrency: candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent
   * claimers take disjoint rows without waiting on each other, and a locked row's WHERE clause is
   * re-checked against its latest version. Candidates locked but not picked (at most `limit` per
   * queue) are released when the statement commits. Incrementing the revision fences off the previous owner.
   * Stored task results come back in the same round trip so a re-executed run can replay them.
   */
  async claim(params: ClaimParams): Promise<ClaimedRun[]> {
    return this.db.query<ClaimedRun>(
      `WITH stale AS (
         SELECT id, status FROM runs
          WHERE status = 'running' AND queue = ANY($1)
            AND heartbeat_at < now() - $3 * interval '1 millisecond'
          ORDER BY heartbeat_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), ready AS (
         -- One ordered index scan per queue (runs_ready_idx), merged below: a single scan over
         -- queue = ANY($1) would have to sort every ready run of those queues first.
         SELECT r.id, r.status FROM unnest($1::text[]) AS q(queue)
          CROSS JOIN LATERAL (
                SELECT id, status, priority, due_at FROM runs
                 WHERE status = 'queued' AND queue = q.queue AND due_at <= now()
                 ORDER BY priority DESC, due_at
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED) r
          ORDER BY r.priority DESC, r.due_at
          LIMIT $2
       ), picked AS (
         (SELECT id, status FROM stale) UNION ALL (SELECT id, status FROM ready) LIMIT $2
       ), claimed AS (
         UPDATE runs r
            SET status = 'running', revision = r.revision + 1, claimed_by = $4,
                heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now())
           FROM picked p
          WHERE r.id = p.id
         RETURNING r.id, r.workflow, r.version, r.revision, r.attempt, r.input, r.priority, r.due_at, p.status AS from_status
       ), history AS (
         INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
         SELECT id, from_status, 'running', revision, $4 FROM claimed
       )
       SELECT c.id, c.workflow, c.version, c.revision, c.attempt, c.input,
              coalesce((SELECT json_agg(json_build_object(
                                 'key', t.key, 'status', t.status, 'attempts', t.attempts,
                                 'output', t.output, 'error', t.error))
                          FROM tasks t WHERE t.run_id = c.id), '[]'::json) AS tasks
         FROM claimed c
        ORDER BY c.from_status = 'queued', c.priority DESC, c.due_at`,
      [params.queues, params.limit, params.claimMinIdleTimeMs, params.workerId],
    );
  }

  /**
   * Refreshes the claims this worker still holds and returns the ids it no longer holds. The
   * revision check means a worker whose run was taken over cannot revive its claim.
   */
  async heartbeat(runs: { id: string; expectedRevision: number }[]): Promise<string[]> {
    if (runs.length === 0) return [];
    const refreshed = await this.db.query<{ id: string }>(
      `UPDATE runs r SET heartbeat_at = now()
         FROM unnest($1::uuid[], $2::integer[]) AS h(id, revision)
        WHERE r.id = h.id AND r.revision = h.revision AND r.status = 'running'
       RETURNING r.id`,
      [runs.map((run) => run.id), runs.map((run) => run.expectedRevision)],
    );
    const alive = new Set(refreshed.map((row) => row.id));
    return runs.filter((run) => !alive.has(run.id)).map((run) => run.id);
  }

  /**
   * Records a task result under the claim. The run row is updated (and so locked) only if it is
   * still running at the expected revision, and the task row is inserted only through it. The
   * first result recorded for a key wins (ON CONFLICT DO NOTHING); a later writer gets the stored
   * one back and adopts it, so each task has exactly one recorded result. Writing a result also
   * counts as a heartbeat.
   */
  async recordTask(runId: string, task: TaskResultRequest): Promise<StoredTask> {
    const [row] = await this.db.query<{ owned: boolean; task: StoredTask | null }>(
      `WITH owner AS (
         UPDATE runs SET heartbeat_at = now(), updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id
       ), inserted AS (
         INSERT INTO tasks (run_id, key, name, status, attempts, output, error)
         SELECT id, $3, $4, $5, $6, $7, $8 FROM owner
         ON CONFLICT (run_id, key) DO NOTHING
         RETURNING key, status, attempts, output, error
       )
       SELECT EXISTS (SELECT 1 FROM owner) AS owned, (SELECT row_to_json(i) FROM inserted i) AS task`,
      [runId, task.expectedRevision, task.key, task.name, task.status, task.attempts, json(task.output), json(task.error)],
    );
    if (!row.owned) throw await this.conflictFor(runId, task.expectedRevision);
    if (row.task) return row.task;
    const [stored] = await this.db.query<StoredTask>(
      `SELECT key, status, attempts, output, error FROM tasks WHERE run_id = $1 AND key = $2`,
      [runId, task.key],
    );
    return stored;
  }

  /**
   * Moves a running run at the expected revision to a terminal state, appends the transition and
   * announces it (NOTIFY is delivered at commit, so long-polling readers see the final row).
   */
  async finish(
    runId: string,
    expectedRevision: number,
    outcome: { status: 'completed'; output: JsonValue } | { status: 'failed'; error: ErrorDetails },
  ): Promise<{ revision: number }> {
    const [row] = await this.db.query<{ revision: number }>(
      `WITH finished AS (
         UPDATE runs
            SET status = $3, output = $4, error = $5, revision = revision + 1,
                heartbeat_at = NULL, finished_at = now(), updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id, revision, claimed_by
       ), history AS (
         INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
         SELECT id, 'running', $3, revision, claimed_by FROM finished
       )
       SELECT revision, pg_notify('${RUN_FINISHED_CHANNEL}', id::text) FROM finished`,
      [
        runId,
        expectedRevision,
        outcome.status,
        outcome.status === 'completed' ? json(outcome.output) : null,
        outcome.status === 'failed' ? json(outcome.error) : null,
      ],
    );
    if (!row) throw await this.conflictFor(runId, expectedRevision);
    return { revision: row.revision };
  }

  /** Tells a missing run (404) from a stale revision (409) after a guarded write matched nothing. */
  private async conflictFor(runId: string, expectedRevision: number): Promise<Error> {
    const [exists] = await this.db.query(`SELECT 1 FROM runs WHERE id = $1`, [runId]);
    return exists ? new RevisionConflictError(runId, expectedRevision) : new RunNotFoundError(runId);
  }
}

/**
 * node-postgres sends a JS array as a PostgreSQL array and a string as text; jsonb parameters
 * are therefore always passed pre-serialised.
 */
export function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
