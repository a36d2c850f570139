import {
  JsonValue,
  RevisionConflictError,
  StartChildRequest,
  StepConflictError,
  type StepKind,
  StepResponse,
  StoredTask,
  SuspendRequest,
} from '@nest-durable/common';
import { Database, insertChildRun, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor, findStep } from '../runs/conflicts';
import { appendHistory, json, notifyReady, STEP_COLUMNS } from '../runs/run-sql';

/**
 * Steps where a run suspends (sleeps, event waits, retry waits) and child starts. Each runs in one
 * transaction under the run's row lock, taken by the revision check.
 */
@Injectable()
export class StepRepository {
  constructor(private readonly db: Database) {}

  /**
   * Suspends the run at a step (sleep, event wait, retry wait) unless the step can resolve at once:
   * a zero sleep, or an event of that name that was sent before the run waited (the oldest one is
   * consumed). Runs under the run's row lock, taken by the revision check, so an event sent
   * concurrently is either consumed here or delivered to the waiting step, never lost.
   *
   * A recorded step keeps its kind and result: a suspend naming the key of a step of another kind (a
   * task result, say) is refused. A resolved sleep or event step is returned as it is; a retry wait is
   * the one step re-armed, each time its task fails again with a long backoff.
   */
  async suspend(runId: string, step: SuspendRequest): Promise<StepResponse> {
    return this.db.transaction(async (tx) => {
      const locked = await this.lockUnlessSuspended(tx, runId, step.expectedRevision, step.key, step.kind);
      if ('landed' in locked) return { suspended: true, task: locked.landed };
      const existing = await this.findStepOfKind(tx, runId, step.key, step.kind);
      if (existing && existing.status !== 'waiting' && step.kind !== 'retry') return { suspended: false, task: existing };

      let resolvedOutput: JsonValue | undefined;
      if (step.kind === 'sleep' && step.delayMs === 0) resolvedOutput = null;
      if (step.kind === 'event') {
        const [event] = await tx.query<{ data: JsonValue }>(
          `UPDATE run_events SET consumed_by = $3
            WHERE id = (SELECT id FROM run_events WHERE run_id = $1 AND name = $2 AND consumed_by IS NULL ORDER BY id LIMIT 1)
           RETURNING data`,
          [runId, step.name, step.key],
        );
        if (event) resolvedOutput = { timedOut: false, data: event.data };
      }
      if (resolvedOutput !== undefined) {
        const [task] = await tx.query<StoredTask>(
          `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output)
           VALUES ($1, $2, $3, $4, $5, 'completed', 1, $6)
           RETURNING ${STEP_COLUMNS}`,
          [runId, step.key, step.kind, step.seq, step.name, json(resolvedOutput)],
        );
        return { suspended: false, task };
      }

      const [task] = await tx.query<StoredTask>(
        `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, wake_at)
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
   * parent gets the child it already started. The child runs in the shard the request names, or
   * (none named) in its parent's, read under the parent's row lock.
   */
  async startChild(runId: string, request: StartChildRequest, childId: string): Promise<StepResponse> {
    return this.db.transaction(async (tx) => {
      const locked = request.wait
        ? await this.lockUnlessSuspended(tx, runId, request.expectedRevision, request.key, 'child')
        : { run: await this.lockRunning(tx, runId, request.expectedRevision) };
      if ('landed' in locked) return { suspended: true, task: locked.landed };
      const parent = locked.run;
      const existing = await this.findStepOfKind(tx, runId, request.key, 'child');
      if (existing) return { suspended: false, task: existing };

      await insertChildRun(tx, {
        id: childId,
        workflow: request.workflow,
        version: request.version,
        shard: request.shard === undefined ? parent.shard : request.shard,
        input: request.input,
        priority: 0,
        idempotencyKey: null,
        runAt: null,
        parentId: runId,
        tags: request.tags ?? parent.tags,
      });
      const [task] = await tx.query<StoredTask>(
        `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, child_id, wake_at)
         VALUES ($1, $2, 'child', $3, $4, $5, 1, $6, $7, now() + $8 * interval '1 millisecond')
         RETURNING ${STEP_COLUMNS}`,
        [
          runId,
          request.key,
          request.seq,
          request.name,
          request.wait ? 'waiting' : 'completed',
          request.wait ? null : json({ childId }),
          childId,
          request.timeoutMs,
        ],
      );
      if (request.wait) await this.suspendRun(tx, runId, request.timeoutMs);
      return { suspended: request.wait, task };
    });
  }

  /** running -> waiting, due after `delayMs` (null: until something wakes it). Caller holds the row lock. */
  private async suspendRun(tx: SqlExecutor, runId: string, delayMs: number | null): Promise<void> {
    await tx.query(
      `WITH suspended AS (
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

  /**
   * The step recorded at `key`, if any, when it is of this kind; a step of another kind is never
   * replaced or handed back as this one (409). No statement changes a step's kind, and a running run's
   * steps are not deleted (only a new attempt drops failed ones), so the check holds until commit.
   */
  private async findStepOfKind(tx: SqlExecutor, runId: string, key: string, kind: StepKind): Promise<StoredTask | undefined> {
    const existing = await findStep(tx, runId, key);
    if (existing && existing.kind !== kind) throw new StepConflictError(runId, key, existing.kind, kind);
    return existing;
  }

  /**
   * lockRunning for a write that suspends the run at step `key`, sent again because the answer to the first was
   * lost (the connection died at COMMIT, which PostgreSQL may still have made durable): if the first landed, the
   * run waits at `expectedRevision + 1` at that very step, which only the holder of that claim can have made
   * so, and the resend gets the step back as the first's answer instead of a 409 that would make the worker give
   * the run up (also once its timer or a wake came due: the step stays waiting until a claim resolves it). Once the
   * wait was resolved (claimed again, an event delivered, the child ended), the resend is a 409 as before.
   */
  private async lockUnlessSuspended(
    tx: SqlExecutor,
    runId: string,
    expectedRevision: number,
    key: string,
    kind: StepKind,
  ): Promise<{ run: { shard: string | null; tags: Record<string, string> } } | { landed: StoredTask }> {
    try {
      return { run: await this.lockRunning(tx, runId, expectedRevision) };
    } catch (error) {
      if (!(error instanceof RevisionConflictError)) throw error;
      const [landed] = await tx.query<StoredTask>(
        `SELECT ${STEP_COLUMNS} FROM tasks
          WHERE run_id = $1 AND key = $3 AND kind = $4 AND status = 'waiting'
            AND EXISTS (SELECT FROM runs r WHERE r.id = $1 AND r.revision = $2 + 1 AND r.status = 'waiting')`,
        [runId, expectedRevision, key, kind],
      );
      if (landed) return { landed };
      throw error;
    }
  }

  /** Locks the run if it is running at the expected revision (else 409/404), and returns its shard. */
  private async lockRunning(tx: SqlExecutor, runId: string, expectedRevision: number): Promise<{ shard: string | null; tags: Record<string, string> }> {
    const [row] = await tx.query<{ shard: string | null; tags: Record<string, string> }>(
      `SELECT shard, tags FROM runs WHERE id = $1 AND revision = $2 AND status = 'running' FOR UPDATE`,
      [runId, expectedRevision],
    );
    if (!row) throw await conflictFor(tx, runId, expectedRevision);
    return row;
  }
}
