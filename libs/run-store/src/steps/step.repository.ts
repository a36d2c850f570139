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
import {
  consumeEvent,
  Database,
  findLandedSuspension,
  findSteps,
  insertChildRun,
  type NewRun,
  insertChildStep,
  insertResolvedStep,
  lockRunningRun,
  type SqlExecutor,
  suspendRun,
  upsertWaitingStep,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor } from '../runs/conflicts';

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
        const event = await consumeEvent(tx, runId, step.name, step.key);
        if (event) resolvedOutput = { timedOut: false, data: event.data };
      }
      if (resolvedOutput !== undefined) {
        const task = await insertResolvedStep(tx, { runId, key: step.key, kind: step.kind, seq: step.seq, name: step.name, output: resolvedOutput });
        return { suspended: false, task };
      }

      const task = await upsertWaitingStep(tx, {
        runId,
        key: step.key,
        kind: step.kind,
        seq: step.seq,
        name: step.name,
        attempts: step.attempts,
        delayMs: step.delayMs,
      });
      await suspendRun(tx, runId, step.delayMs);
      return { suspended: true, task };
    });
  }

  /**
   * Starts a child run (one transaction: the child, its first transition, the parent's step and,
   * when waiting, the parent's suspension). The step row makes it idempotent per key: a re-executed
   * parent gets the child it already started. The child runs in the shard the request names, or
   * (none named) in its parent's, read under the parent's row lock. `trace`: the trace context its worker is to
   * run it under (the coordinator's span of this step).
   */
  async startChild(runId: string, request: StartChildRequest, childId: string, trace: Pick<NewRun, 'traceparent' | 'tracestate'>): Promise<StepResponse> {
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
        ...trace,
      });
      const task = await insertChildStep(tx, {
        runId,
        key: request.key,
        seq: request.seq,
        name: request.name,
        wait: request.wait,
        childId,
        timeoutMs: request.timeoutMs,
      });
      if (request.wait) await suspendRun(tx, runId, request.timeoutMs);
      return { suspended: request.wait, task };
    });
  }

  /**
   * The step recorded at `key`, if any, when it is of this kind; a step of another kind is never
   * replaced or handed back as this one (409). No statement changes a step's kind, and a running run's
   * steps are not deleted (only a new attempt drops failed ones), so the check holds until commit.
   */
  private async findStepOfKind(tx: SqlExecutor, runId: string, key: string, kind: StepKind): Promise<StoredTask | undefined> {
    const [existing] = await findSteps(tx, [{ runId, key }]);
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
      const landed = await findLandedSuspension(tx, { runId, expectedRevision, key, kind });
      if (landed) return { landed };
      throw error;
    }
  }

  /** Locks the run if it is running at the expected revision (else 409/404), and returns its shard. */
  private async lockRunning(tx: SqlExecutor, runId: string, expectedRevision: number): Promise<{ shard: string | null; tags: Record<string, string> }> {
    const row = await lockRunningRun(tx, runId, expectedRevision);
    if (!row) throw await conflictFor(tx, runId, expectedRevision);
    return row;
  }
}
