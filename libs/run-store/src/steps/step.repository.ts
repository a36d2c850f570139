import {
  type CreateCompletionTokenRequest,
  InvalidRequestError,
  type AttemptTime,
  JsonValue,
  PENDING_UPDATES_MAX,
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
  findPendingUpdates,
  findSteps,
  insertChildRun,
  type NewRun,
  insertChildStep,
  insertResolvedStep,
  insertTokenStep,
  lockRunningRun,
  type SqlExecutor,
  suspendRun,
  tokenForWait,
  upsertWaitingStep,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor } from '../runs/conflicts';

/**
 * Steps where a run suspends (sleeps, event waits, retry waits, waits on completion tokens), child starts and
 * completion tokens. Each runs in one transaction under the run's row lock, taken by the revision check.
 */
/** A `token` step's key, `token:<name>#<n>`; its wait is `external:<name>#<n>`. */
const TOKEN_KEY_PREFIX = 'token:';

@Injectable()
export class StepRepository {
  constructor(private readonly db: Database) {}

  /**
   * Suspends the run at a step (sleep, event wait, retry wait) unless the step can resolve at once:
   * a zero sleep, or an event of that name (with the wait's `match` values, if it has one) that was sent
   * before the run waited (the oldest one is consumed). Runs under the run's row lock, taken by the revision check, so an event sent
   * concurrently is either consumed here or delivered to the waiting step, never lost.
   *
   * A recorded step keeps its kind and result: a suspend naming the key of a step of another kind (a
   * task result, say) is refused. A resolved sleep or event step is returned as it is; a retry wait is
   * the one step re-armed, each time its task fails again with a long backoff.
   *
   * Updates (see `waitOrApplyUpdates`): at a sleep or event wait, pending updates are handed back to be applied
   * there first; a wait still waiting (its run was woken to apply updates) keeps its deadline.
   */
  async suspend(runId: string, step: SuspendRequest): Promise<StepResponse> {
    return this.db.transaction(async (tx) => {
      const locked = await this.lockUnlessSuspended(tx, runId, step.expectedRevision, step.key, step.kind);
      if ('landed' in locked) return { suspended: true, task: locked.landed };
      const existing = await this.findStepOfKind(tx, runId, step.key, step.kind);
      if (existing && existing.status !== 'waiting' && step.kind !== 'retry') return { suspended: false, task: existing };
      if (existing && step.kind !== 'retry') return this.waitOrApplyUpdates(tx, runId, existing);

      let resolvedOutput: JsonValue | undefined;
      let delayMs = step.kind === 'external' ? null : step.delayMs;
      if (step.kind === 'sleep' && step.delayMs === 0) resolvedOutput = null;
      if (step.kind === 'event') {
        const event = await consumeEvent(tx, runId, step.name, step.key, step.match);
        if (event) resolvedOutput = { timedOut: false, data: event.data };
      }
      if (step.kind === 'external') {
        // Resolves at once with an outcome kept for it, or as timed out once its token expired.
        const token = await tokenForWait(tx, runId, step.key);
        if (!token) throw new InvalidRequestError('invalid_key', `run ${runId} recorded no completion token for the wait ${step.key}`);
        if (token.outcome !== null) resolvedOutput = { timedOut: false, ...(token.outcome as object) };
        else if (token.remainingMs === 0) resolvedOutput = { timedOut: true };
        delayMs = token.remainingMs;
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
        delayMs,
        match: step.kind === 'event' ? step.match : undefined,
        ...(step.kind === 'retry' && step.attemptTimes && { executed: numbered(step.attemptTimes, step.attempts, step.durationMs) }),
      });
      if (step.kind !== 'retry') return this.waitOrApplyUpdates(tx, runId, task);
      await suspendRun(tx, runId, delayMs);
      return { suspended: true, task };
    });
  }

  /**
   * Records a completion token at a `token` step, with its row, its wait to be the `external` step of the same
   * name and occurrence. Sent again (the answer to the first was lost), the recorded step is the answer: the
   * token does not change, and the run's revision neither (no suspension).
   */
  async createToken(runId: string, request: CreateCompletionTokenRequest, token: string): Promise<StoredTask> {
    if (!request.key.startsWith(TOKEN_KEY_PREFIX)) {
      throw new InvalidRequestError('invalid_key', `a completion token's step key must start with '${TOKEN_KEY_PREFIX}'`);
    }
    return this.db.transaction(async (tx) => {
      await this.lockRunning(tx, runId, request.expectedRevision);
      const existing = await this.findStepOfKind(tx, runId, request.key, 'token');
      if (existing) return existing;
      const waitKey = `external:${request.key.slice(TOKEN_KEY_PREFIX.length)}`;
      return insertTokenStep(tx, { runId, key: request.key, seq: request.seq, name: request.name, token, timeoutMs: request.timeoutMs, waitKey });
    });
  }

  /**
   * The run is at waiting step `step` (a sleep, an event or a child wait, recorded `waiting`): with updates pending,
   * it does not suspend, and gets them (up to PENDING_UPDATES_MAX, in arrival order) to apply at this wait first; it
   * sends the step again once they are recorded. Without, it suspends until the step is due (its `wake_at`: a wait
   * recorded just now is due after its delay, one its run was woken at to apply updates keeps its deadline). Under
   * the run's row lock, which a send takes too (updates.sql.ts), so an update sent meanwhile is either handed back
   * here or wakes the suspended run.
   */
  private async waitOrApplyUpdates(tx: SqlExecutor, runId: string, step: StoredTask): Promise<StepResponse> {
    if (await suspendRun(tx, runId, null, step.key)) return { suspended: true, task: step };
    return { suspended: false, task: step, updates: await findPendingUpdates(tx, runId, PENDING_UPDATES_MAX) };
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
      if (existing?.status === 'waiting' && request.wait) return this.waitOrApplyUpdates(tx, runId, existing);
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
      if (request.wait) return this.waitOrApplyUpdates(tx, runId, task);
      return { suspended: false, task };
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

/** The attempts of an execution ending in a retry wait, numbered (the last one is the `attempts` made so far). */
function numbered(times: AttemptTime[], attempts: number, durationMs: number | undefined) {
  const first = attempts - times.length + 1;
  const last = times[times.length - 1];
  return {
    durationMs: durationMs ?? last.offsetMs + last.durationMs,
    attemptTimes: times.map((time, index) => ({ ...time, attempt: first + index })),
  };
}
