import {
  ClaimedRun,
  ErrorDetails,
  JsonValue,
  RevisionConflictError,
  RunNotFoundError,
  StartChildRequest,
  StepResponse,
  StoredTask,
  SuspendRequest,
  TaskResultRequest,
} from '@app/contracts';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import {
  appendHistory,
  INSERT_RUNS,
  insertRunsParams,
  NOTIFY_INSERTED_QUEUES,
  json,
  notifyFinished,
  notifyReady,
  STEP_COLUMNS,
  stepsToRerun,
  wakeParents,
} from './run-sql';

export interface ClaimParams {
  queues: string[];
  limit: number;
  workerId: string;
  /** A running run whose last heartbeat is older than this (by the database clock) is taken over. */
  claimMinIdleTimeMs: number;
}

/** A claimed run, with how long it had been ready (null when it was taken over from a dead worker). */
export type TakenRun = ClaimedRun & { readyForSeconds: number | null };

export type RunOutcome = { status: 'completed'; output: JsonValue } | { status: 'failed'; error: ErrorDetails };

export interface NewChild {
  id: string;
  queue: string;
}

/**
 * Claims and every write a worker makes under a claim. The revision check, the increment and
 * the change are one statement (or, for suspensions and child starts, happen under the run's row
 * lock taken by that check), so a worker that lost its claim (taken over after going idle, or the
 * run was cancelled) can change nothing.
 */
@Injectable()
export class RunLeaseRepository {
  constructor(private readonly db: Database) {}

  /**
   * Takes up to `limit` runs: first running runs whose claim went idle (their worker is presumed
   * dead), then due queued or waiting runs, highest priority first, oldest due first.
   *
   * Safe under concurrency: candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent
   * claimers take disjoint rows without waiting on each other, and a locked row's WHERE clause is
   * re-checked against its latest version. Candidates locked but not picked (at most `limit` per
   * queue) are released when the statement commits.
   */
  async claim(params: ClaimParams): Promise<TakenRun[]> {
    return this.db.query<TakenRun>(
      this.takeRuns(`stale AS (
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
                 WHERE status IN ('queued', 'waiting') AND queue = q.queue AND due_at <= now()
                 ORDER BY priority DESC, due_at
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED) r
          ORDER BY r.priority DESC, r.due_at
          LIMIT $2
       ), picked AS (
         (SELECT id, status FROM stale) UNION ALL (SELECT id, status FROM ready) LIMIT $2
       )`),
      [params.queues, params.limit, params.claimMinIdleTimeMs, params.workerId],
    );
  }

  /**
   * Takes runs a transport (Redis) delivered, each at the revision its message carries: a run is
   * taken only if it is still due at that revision, or if its claim went idle (its worker died, so
   * anyone may take it over, as with a claim). Stale messages (the run moved on, another worker has
   * it, or is taking it right now: SKIP LOCKED) take nothing; the caller drops them.
   */
  async take(deliveries: { id: string; revision: number }[], workerId: string, claimMinIdleTimeMs: number): Promise<TakenRun[]> {
    if (deliveries.length === 0) return [];
    return this.db.query<TakenRun>(
      this.takeRuns(`delivered AS (
         SELECT DISTINCT ON (id) id, revision FROM unnest($1::uuid[], $2::integer[]) AS m(id, revision) ORDER BY id, revision DESC
       ), picked AS (
         SELECT r.id, r.status FROM runs r JOIN delivered m ON r.id = m.id
          WHERE (r.revision = m.revision AND r.status IN ('queued', 'waiting') AND r.due_at <= now())
             OR (r.status = 'running' AND r.heartbeat_at < now() - $3 * interval '1 millisecond')
          FOR UPDATE OF r SKIP LOCKED
       )`),
      [deliveries.map((d) => d.id), deliveries.map((d) => d.revision), claimMinIdleTimeMs, workerId],
    );
  }

  /**
   * The claim itself, for the rows of a `picked` CTE (id, status; locked by it), with $3 the idle
   * time and $4 the worker id: moves them to running at revision + 1 (fencing off the previous
   * owner), appends their transitions, resolves suspension steps still waiting (a sleep that ended,
   * an event or child wait that timed out), and returns them with their recorded steps so a
   * re-executed run replays them in the same round trip.
   */
  private takeRuns(picked: string): string {
    return `WITH ${picked}, claimed AS (
         UPDATE runs r
            SET status = 'running', revision = r.revision + 1, claimed_by = $4,
                heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now())
           FROM picked p
          WHERE r.id = p.id
         RETURNING r.id, r.workflow, r.version, r.revision, r.attempt, r.input, r.priority, r.due_at,
                   p.status AS from_status
       ), history AS (
         ${appendHistory('claimed', 'from_status', `'running'`, '$4')}
       ), resolved AS (
         UPDATE tasks t
            SET status = 'completed',
                output = CASE t.kind WHEN 'sleep' THEN NULL WHEN 'retry' THEN t.output
                                     ELSE '{"timedOut": true}'::jsonb END
           FROM claimed c
          WHERE t.run_id = c.id AND t.status = 'waiting'
         RETURNING t.run_id, ${STEP_COLUMNS.split(', ').map((column) => `t.${column}`).join(', ')}
       )
       SELECT c.id, c.workflow, c.version, c.revision, c.attempt, c.input,
              CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
              coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                          SELECT ${STEP_COLUMNS} FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                          UNION ALL
                          SELECT ${STEP_COLUMNS} FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
         FROM claimed c
        ORDER BY c.from_status = 'running' DESC, c.priority DESC, c.due_at`;
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
  async recordTask(runId: string, task: TaskResultRequest, on: SqlExecutor = this.db): Promise<StoredTask> {
    return unwrap((await this.recordTasks([{ runId, task }], on))[0]);
  }

  /**
   * recordTask for many runs in one statement (a worker's coalesced reports): each result is
   * checked against its own run's revision, and comes back as the stored task or the error
   * (409 stale, 404 unknown) for that one alone.
   */
  async recordTasks(items: { runId: string; task: TaskResultRequest }[], on: SqlExecutor = this.db): Promise<(StoredTask | Error)[]> {
    const rows = await on.query<{ owned: boolean; task: StoredTask | null }>(
      `WITH input AS (
         SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::integer[], $5::text[], $6::text[],
                              $7::integer[], $8::jsonb[], $9::jsonb[])
                  WITH ORDINALITY AS i(run_id, revision, key, seq, name, status, attempts, output, error, n)
       ), owner AS (
         UPDATE runs r SET heartbeat_at = now(), updated_at = now()
           FROM input i
          WHERE r.id = i.run_id AND r.revision = i.revision AND r.status = 'running'
         RETURNING r.id, r.revision
       ), inserted AS (
         INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error)
         SELECT i.run_id, i.key, 'task', i.seq, i.name, i.status, i.attempts, i.output, i.error
           FROM input i JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
         ON CONFLICT (run_id, key) DO NOTHING
         RETURNING run_id, ${STEP_COLUMNS}
       )
       SELECT o.id IS NOT NULL AS owned,
              (SELECT row_to_json(s) FROM (SELECT ${STEP_COLUMNS} FROM inserted t
                                            WHERE t.run_id = i.run_id AND t.key = i.key) s) AS task
         FROM input i LEFT JOIN owner o ON o.id = i.run_id AND o.revision = i.revision
        ORDER BY i.n`,
      [
        items.map(({ runId }) => runId),
        items.map(({ task }) => task.expectedRevision),
        items.map(({ task }) => task.key),
        items.map(({ task }) => task.seq),
        items.map(({ task }) => task.name),
        items.map(({ task }) => task.status),
        items.map(({ task }) => task.attempts),
        items.map(({ task }) => json(task.output)),
        items.map(({ task }) => json(task.error)),
      ],
    );
    return Promise.all(
      rows.map(async (row, index) => {
        const { runId, task } = items[index];
        if (!row.owned) return this.conflictFor(runId, task.expectedRevision, on);
        // Not inserted: a result for this key was recorded first; adopt it.
        return row.task ?? (await this.findStep(on, runId, task.key))!;
      }),
    );
  }

  /**
   * Moves a running run at the expected revision to a terminal state, appends the transition,
   * resolves the step of a parent waiting on it, and announces both (NOTIFY is delivered at
   * commit, so woken readers see the final rows).
   */
  async finish(runId: string, expectedRevision: number, outcome: RunOutcome, on: SqlExecutor = this.db): Promise<{ revision: number; workflow: string }> {
    return unwrap((await this.finishMany([{ runId, expectedRevision, outcome }], on))[0]);
  }

  /** finish for many runs in one statement; each is checked on its own (see recordTasks). */
  async finishMany(
    items: { runId: string; expectedRevision: number; outcome: RunOutcome }[],
    on: SqlExecutor = this.db,
  ): Promise<({ revision: number; workflow: string } | Error)[]> {
    const rows = await on.query<{ revision: number | null; workflow: string | null }>(
      `WITH input AS (
         SELECT * FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::jsonb[], $5::jsonb[])
                  WITH ORDINALITY AS i(run_id, revision, status, output, error, n)
       ), finished AS (
         UPDATE runs r
            SET status = i.status, output = i.output, error = i.error, revision = r.revision + 1,
                heartbeat_at = NULL, finished_at = now(), updated_at = now()
           FROM input i
          WHERE r.id = i.run_id AND r.revision = i.revision AND r.status = 'running'
         RETURNING r.id, r.revision, r.claimed_by, r.parent_id, r.status, r.output, r.error, r.workflow, i.revision AS expected
       ), history AS (
         ${appendHistory('finished', `'running'`, 'status', 'claimed_by')}
       ), ${wakeParents('finished')}, announced AS (
         SELECT ${notifyFinished('finished')} AS finished, ${notifyReady('woken_parents')} AS parents
       )
       SELECT f.revision, f.workflow
         FROM input i LEFT JOIN finished f ON f.id = i.run_id AND f.expected = i.revision CROSS JOIN announced
        ORDER BY i.n`,
      [
        items.map((item) => item.runId),
        items.map((item) => item.expectedRevision),
        items.map((item) => item.outcome.status),
        items.map((item) => (item.outcome.status === 'completed' ? json(item.outcome.output) : null)),
        items.map((item) => (item.outcome.status === 'failed' ? json(item.outcome.error) : null)),
      ],
    );
    return Promise.all(
      rows.map(async (row, index) =>
        row.revision === null
          ? this.conflictFor(items[index].runId, items[index].expectedRevision, on)
          : { revision: row.revision, workflow: row.workflow! },
      ),
    );
  }

  /**
   * Workflow-level retry: instead of failing, the run waits `delayMs` and then runs again as
   * attempt + 1. Completed steps are kept (it resumes from its checkpoints); failed ones and retry
   * waits are removed so they run again.
   */
  async retryLater(
    runId: string,
    expectedRevision: number,
    error: ErrorDetails,
    delayMs: number,
    on: SqlExecutor = this.db,
  ): Promise<{ revision: number }> {
    const [row] = await on.query<{ revision: number }>(
      `WITH retried AS (
         UPDATE runs
            SET status = 'waiting', attempt = attempt + 1, error = $3, revision = revision + 1,
                due_at = now() + $4 * interval '1 millisecond', heartbeat_at = NULL, updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id, revision, claimed_by, queue, due_at
       ), history AS (
         ${appendHistory('retried', `'running'`, `'waiting'`, 'claimed_by')}
       ), cleared AS (
         DELETE FROM tasks t USING retried r WHERE t.run_id = r.id AND ${stepsToRerun('t')}
       )
       SELECT revision, CASE WHEN due_at <= now() THEN ${notifyReady('retried')} END FROM retried`,
      [runId, expectedRevision, json(error), delayMs],
    );
    if (!row) throw await this.conflictFor(runId, expectedRevision);
    return { revision: row.revision };
  }

  /** Gives a running run back (worker shutting down): queued and due now, for any worker to take at once. */
  async release(runId: string, expectedRevision: number): Promise<{ revision: number }> {
    const [row] = await this.db.query<{ revision: number }>(
      `WITH released AS (
         UPDATE runs
            SET status = 'queued', due_at = now(), revision = revision + 1, heartbeat_at = NULL, updated_at = now()
          WHERE id = $1 AND revision = $2 AND status = 'running'
         RETURNING id, revision, claimed_by, queue
       ), history AS (
         ${appendHistory('released', `'running'`, `'queued'`, 'claimed_by')}
       )
       SELECT revision, ${notifyReady('released')} FROM released`,
      [runId, expectedRevision],
    );
    if (!row) throw await this.conflictFor(runId, expectedRevision);
    return { revision: row.revision };
  }

  /**
   * Suspends the run at a step (sleep, event wait, retry wait) unless the step can resolve at once:
   * a zero sleep, or an event of that name that was sent before the run waited (the oldest one is
   * consumed). Runs under the run's row lock, taken by the revision check, so an event sent
   * concurrently is either consumed here or delivered to the waiting step, never lost.
   */
  async suspend(runId: string, step: SuspendRequest): Promise<StepResponse> {
    return this.db.transaction(async (tx) => {
      await this.lockRunning(tx, runId, step.expectedRevision);
      const existing = await this.findStep(tx, runId, step.key);
      if (existing && existing.status !== 'waiting' && step.kind !== 'retry') return { suspended: false, task: existing };

      let resolvedOutput: JsonValue | undefined;
      if (step.kind === 'sleep' && step.delayMs === 0) resolvedOutput = null;
      if (step.kind === 'event') {
        const [event] = await tx.query<{ data: JsonValue }>(`UPDATE run_events SET consumed_by = $3
            WHERE id = (SELECT id FROM run_events WHERE run_id = $1 AND name = $2 AND consumed_by IS NULL ORDER BY id LIMIT 1)
           RETURNING data`,
          [runId, step.name, step.key],
        );
        if (event) resolvedOutput = { timedOut: false, data: event.data };
      }
      if (resolvedOutput !== undefined) {
        const [task] = await tx.query<StoredTask>(`INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output)
           VALUES ($1, $2, $3, $4, $5, 'completed', 1, $6)
           RETURNING ${STEP_COLUMNS}`,
          [runId, step.key, step.kind, step.seq, step.name, json(resolvedOutput)],
        );
        return { suspended: false, task };
      }

      const [task] = await tx.query<StoredTask>(`INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, wake_at)
         VALUES ($1, $2, $3, $4, $5, 'waiting', $6, $7, now() + $8 * interval '1 millisecond')
         ON CONFLICT (run_id, key) DO UPDATE
           SET status = 'waiting', attempts = excluded.attempts, output = excluded.output, wake_at = excluded.wake_at
         RETURNING ${STEP_COLUMNS}`,
        [runId, step.key, step.kind, step.seq, step.name, step.attempts, json({ attempts: step.attempts }), step.delayMs],
      );
      await this.suspendRun(tx, runId, step.delayMs);
      return { suspended: true, task };
    });
  }

  /**
   * Starts a child run (one transaction: the child, its first transition, the parent's step and,
   * when waiting, the parent's suspension). The step row makes it idempotent per key: a re-executed
   * parent gets the child it already started.
   */
  async startChild(runId: string, request: StartChildRequest, child: NewChild): Promise<StepResponse> {
    return this.db.transaction(async (tx) => {
      await this.lockRunning(tx, runId, request.expectedRevision);
      const existing = await this.findStep(tx, runId, request.key);
      if (existing) return { suspended: false, task: existing };

      await tx.query(
        `WITH ${INSERT_RUNS} SELECT ${NOTIFY_INSERTED_QUEUES}`,
        insertRunsParams([
          {
            id: child.id,
            workflow: request.workflow,
            version: request.version,
            queue: child.queue,
            input: request.input,
            priority: 0,
            idempotencyKey: null,
            runAt: null,
            parentId: runId,
          },
        ]),
      );
      const [task] = await tx.query<StoredTask>(`INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, child_id, wake_at)
         VALUES ($1, $2, 'child', $3, $4, $5, 1, $6, $7, now() + $8 * interval '1 millisecond')
         RETURNING ${STEP_COLUMNS}`,
        [
          runId,
          request.key,
          request.seq,
          request.name,
          request.wait ? 'waiting' : 'completed',
          request.wait ? null : json({ childId: child.id }),
          child.id,
          request.timeoutMs,
        ],
      );
      if (request.wait) await this.suspendRun(tx, runId, request.timeoutMs);
      return { suspended: request.wait, task };
    });
  }

  /** running -> waiting, due after `delayMs` (null: until something wakes it). Caller holds the row lock. */
  private async suspendRun(tx: SqlExecutor, runId: string, delayMs: number | null): Promise<void> {
    await tx.query(`WITH suspended AS (
         UPDATE runs
            SET status = 'waiting', revision = revision + 1, heartbeat_at = NULL, updated_at = now(),
                due_at = coalesce(now() + $2 * interval '1 millisecond', 'infinity')
          WHERE id = $1 AND status = 'running'
         RETURNING id, revision, claimed_by, queue, due_at
       ), history AS (
         ${appendHistory('suspended', `'running'`, `'waiting'`, 'claimed_by')}
       )
       SELECT CASE WHEN due_at <= now() THEN ${notifyReady('suspended')} END FROM suspended`,
      [runId, delayMs],
    );
  }

  /** Locks the run if it is running at the expected revision (else 409/404). */
  private async lockRunning(tx: SqlExecutor, runId: string, expectedRevision: number): Promise<void> {
    const [row] = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND revision = $2 AND status = 'running' FOR UPDATE`, [
      runId,
      expectedRevision,
    ]);
    if (!row) throw await this.conflictFor(runId, expectedRevision);
  }

  private async findStep(on: SqlExecutor, runId: string, key: string): Promise<StoredTask | undefined> {
    const [step] = await on.query<StoredTask>(`SELECT ${STEP_COLUMNS} FROM tasks WHERE run_id = $1 AND key = $2`, [runId, key]);
    return step;
  }

  /**
   * Tells a missing run (404) from a stale revision (409) after a guarded write matched nothing, on
   * the caller's connection (inside a transaction, taking another pool connection could deadlock the
   * pool under load).
   */
  private async conflictFor(runId: string, expectedRevision: number, on: SqlExecutor = this.db): Promise<Error> {
    const [exists] = await on.query(`SELECT 1 FROM runs WHERE id = $1`, [runId]);
    return exists ? new RevisionConflictError(runId, expectedRevision) : new RunNotFoundError(runId);
  }
}

function unwrap<T>(result: T | Error): T {
  if (result instanceof Error) throw result;
  return result;
}
