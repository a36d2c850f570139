import { type EventMatch, type StepResponse, type StoredTask, traceCarrierOf } from '@nest-durable/common';
import { isRevisionConflict, isTransient } from '@nest-durable/client';
import { RunLostError, RunSuspendedError } from '@nest-durable/workflow';
import type { RunLease } from '@app/locking';
import { type Context, trace } from '@opentelemetry/api';
import type { CoordinatorApi } from './coordinator.api';
import { inStepSpan } from './run-tracing';
import type { RunValues, RunValuesUpdate } from './run-values';
import type { StepAddress, StepHistory } from './step-history';
import type { RetryWait } from './task-attempts';
import type { UpdateHandlers } from './update-handlers';

/**
 * How one execution of a run takes its steps, whatever each one does (RunContext says that): each begins where the
 * run's history expects it (`begin`), writes under the run's claim (`call`), leaves task results on their way while
 * the handler goes on (`unsettle`), and the steps the run suspends at apply the updates sent to it (`suspendAt`).
 */
export class RunSteps {
  /** The task results sent and not yet known recorded (see `unsettle`). */
  private unsettled: Promise<void> = Promise.resolve();
  private refused: unknown;

  constructor(
    private readonly runId: string,
    private readonly lease: RunLease,
    private readonly api: CoordinatorApi,
    private readonly history: StepHistory,
    private readonly updates: UpdateHandlers,
    private readonly values: RunValues,
    /** The context of this execution's run span: the parent of its steps' spans. */
    private readonly traced: Context,
  ) {}

  /** Why a task result this execution sent was refused, once one was (see `unsettle`). */
  get refusal(): unknown {
    return this.refused;
  }

  /**
   * A task's result goes back to the handler while its record is still on its way, so that the record
   * of a handler's last task and the run's outcome travel in one report batch (one request, one
   * commit: see CoordinatorApi). The record is still durable before anything later happens: every
   * step first waits for the records sent before it (`settled`); the outcome goes after them, and is
   * refused with any of them (by CoordinatorApi before it is sent, by the coordinator in one batch).
   * A record that is refused ends the execution at the next step (RunLostError after a 409, see
   * `call`), or, if the handler has returned meanwhile, fails the run as the refusal would have.
   */
  unsettle(record: Promise<unknown>): void {
    // Settles to nothing: the recorded tasks are not kept for the whole execution.
    this.unsettled = Promise.all([this.unsettled, record]).then(() => undefined);
    // Seen by the next step, or by the outcome's own refusal: not an unhandled rejection meanwhile.
    record.catch((error: unknown) => {
      this.refused ??= error;
    });
    this.unsettled.catch(() => undefined);
  }

  /**
   * Waits until the task results sent so far are recorded (throws RunLostError if one was refused). A step is about
   * to begin: the values that changed since the last one go out first, without being waited for (they need only land
   * before the run moves on: a suspension or the outcome waits for them, see RunContext.flushValues).
   */
  async settled(): Promise<void> {
    const before = this.unsettled;
    this.values.flush();
    await before;
  }

  /** The run's values (RunValues), sent as a task result is (see `unsettle`): no round trip of their own, and refused with the run's later reports. */
  sendValues(update: RunValuesUpdate): boolean {
    if (!this.lease.isHeld) return false;
    const recording = this.api.recordValues(this.runId, { expectedRevision: this.lease.revision, ...update });
    this.unsettle(this.call(() => recording));
    return true;
  }

  begin(kind: 'task' | 'sleep' | 'event' | 'child' | 'group' | 'token' | 'external', name: string, key?: string) {
    this.lease.throwIfEnded();
    this.updates.checkNoStep();
    return this.history.next(kind, name, key);
  }

  /** A wait an earlier execution went past: the updates applied while the run waited there are applied again first. */
  async waited(step: StepAddress & { recorded?: StoredTask }): Promise<StoredTask> {
    await this.updates.replay(this.history.updatesAt(step.seq));
    return step.recorded!;
  }

  stepAttributes(kind: string, name: string, key: string) {
    return { 'workflow.run_id': this.runId, 'workflow.step.kind': kind, 'workflow.step.name': name, 'workflow.step.key': key };
  }

  /**
   * Sends a write under the claim. A 409 means the run is no longer ours, and a coordinator that
   * stays unreachable means we cannot tell: either way this execution stops here (RunLostError, which
   * the handler cannot outlive: every later step throws it too) and writes nothing more.
   */
  async call<R>(send: () => Promise<R>): Promise<R> {
    try {
      return await send();
    } catch (error) {
      if (isRevisionConflict(error)) this.lease.lose('the coordinator refused a write (revision conflict)');
      else if (isTransient(error)) this.lease.lose(`the coordinator could not be reached: ${(error as Error).message}`);
      else throw error;
      throw new RunLostError(this.runId, this.lease.lostReason!);
    }
  }

  /**
   * Sends a suspending step; if the run did suspend, this execution ends here. At a wait (`waitSeq`, its position:
   * a sleep, an event, a child or a completion-token wait), updates are applied before the run suspends: those an
   * earlier execution applied there again, then those the coordinator answers the step with (pending ones, in
   * arrival order), whose answers are recorded before the step is sent again (see StepRepository.suspend, and
   * GroupRepository.wait for a wait group).
   */
  async suspendAt<R extends { suspended: boolean; updates?: StepResponse['updates'] }>(key: string, send: () => Promise<R>, waitSeq?: number): Promise<R> {
    // A suspension moves the revision on: the task results and values sent before it must have landed first.
    this.values.flush(true);
    await this.settled();
    if (waitSeq !== undefined) await this.updates.replay(this.history.updatesAt(waitSeq));
    for (;;) {
      const response = await this.call(() => this.lease.whileEnding(send));
      if (waitSeq !== undefined && response.updates && response.updates.length > 0) {
        const applied = await this.updates.apply(response.updates, (name) => this.history.nextUpdateKey(name));
        this.lease.throwIfEnded();
        await this.call(() => this.api.recordUpdates(this.runId, { expectedRevision: this.lease.revision, seq: waitSeq, updates: applied }));
        // The handlers may have changed what the run's query handlers answer: recorded before it waits again.
        this.values.flush(true);
        await this.settled();
        continue;
      }
      if (!response.suspended) return response;
      this.values.close();
      this.lease.suspend();
      throw new RunSuspendedError(this.runId, key);
    }
  }

  /**
   * Suspends the run at a sleep, an event wait or a completion token's (see suspendAt: updates are applied there
   * first), in the step's span.
   */
  async wait(
    wait:
      | { kind: 'sleep'; name: string; delayMs: number }
      | { kind: 'event'; name: string; delayMs: number | null; match?: EventMatch }
      | { kind: 'external'; name: string },
    step: { key: string; seq: number },
    attributes: Record<string, number> = {},
  ): Promise<StoredTask> {
    const spanAttributes = { ...this.stepAttributes(wait.kind, wait.name, step.key), ...attributes };
    const response = await inStepSpan(this.traced, `${wait.kind} ${wait.name}`, spanAttributes, (span) =>
      this.suspendAt(
        step.key,
        () =>
          this.api.suspend(this.runId, { expectedRevision: this.lease.revision, key: step.key, seq: step.seq, attempts: 0, ...wait, ...traceCarrierOf(span) }),
        step.seq,
      ),
    );
    return response.task;
  }

  /** A retry wait too long to hold a worker slot: the run suspends, and the task is retried when it is due. */
  async suspendForRetry({ key, seq, name, delayMs, attempts, clock }: RetryWait): Promise<void> {
    // Under the task's span, active while its attempts run.
    const carrier = traceCarrierOf(trace.getActiveSpan());
    await this.suspendAt(`retry:${key}`, () =>
      this.api.suspend(this.runId, {
        expectedRevision: this.lease.revision,
        key: `retry:${key}`,
        seq,
        kind: 'retry',
        name,
        delayMs,
        attempts,
        // This execution ends here: its attempts are kept with the wait (the task's result will not carry them).
        durationMs: clock.elapsedMs(),
        attemptTimes: clock.timesSoFar(),
        ...carrier,
      }),
    );
  }
}
