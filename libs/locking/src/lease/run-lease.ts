import { RunLostError, RunSuspendedError } from '@nest-durable/common';

/**
 * This worker's hold on one run: the revision its writes must carry, and the abort signal its
 * handler and tasks observe. It ends once: lost (409, heartbeat refused, shutdown), suspended (the
 * run waits for time, an event or a child, and the worker is done with it for now) or finished (its
 * outcome was reported).
 */
export class RunLease {
  private readonly controller = new AbortController();
  private state: 'held' | 'lost' | 'suspended' | 'finished' = 'held';
  private reason: string | undefined;
  /** Writes in flight that move the run on if they land (its outcome, a suspension). */
  private endingWrites = 0;
  private reporting = false;

  /** `outcomeReported`: called once, when the handler is done and its run's outcome goes out (see reportOutcome). */
  constructor(
    readonly runId: string,
    readonly revision: number,
    private readonly outcomeReported: () => void = () => undefined,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get lostReason(): string | undefined {
    return this.reason;
  }

  get isLost(): boolean {
    return this.state === 'lost';
  }

  get isSuspended(): boolean {
    return this.state === 'suspended';
  }

  /** Still ours to write to. */
  get isHeld(): boolean {
    return this.state === 'held';
  }

  /**
   * Held, and no write that moves the run on is in flight. Only such a claim is heartbeated, and
   * only for such a claim does a heartbeat's "lost" mean another owner: while this worker reports
   * the run's outcome or suspends it, that very write is what makes the revision stale, and its own
   * answer (success, or 409) tells what happened.
   */
  get needsHeartbeat(): boolean {
    return this.isHeld && this.endingWrites === 0;
  }

  /** Sends `write`, which moves the run on if it lands, with heartbeats paused for the run meanwhile. */
  async whileEnding<T>(write: () => Promise<T>): Promise<T> {
    this.endingWrites++;
    try {
      return await write();
    } finally {
      this.endingWrites--;
    }
  }

  /**
   * Sends the run's outcome (whileEnding). From here on the handler is done: the run no longer counts against
   * the worker's concurrency while the outcome is on its way (WorkerRuntime claims ahead for its slot).
   */
  reportOutcome<T>(write: () => Promise<T>): Promise<T> {
    if (!this.reporting) {
      this.reporting = true;
      this.outcomeReported();
    }
    return this.whileEnding(write);
  }

  /** The handler is done and the run's outcome is being (or was) reported. */
  get isReportingOutcome(): boolean {
    return this.reporting;
  }

  lose(reason: string): void {
    if (!this.isHeld) return;
    this.state = 'lost';
    this.reason = reason;
    this.controller.abort(new RunLostError(this.runId, reason));
  }

  suspend(): void {
    if (!this.isHeld) return;
    this.state = 'suspended';
    this.controller.abort(new RunLostError(this.runId, 'the run suspended'));
  }

  /** The run's outcome was recorded: the claim ended with it. */
  finish(): void {
    if (this.isHeld) this.state = 'finished';
  }

  /** Stops a handler that goes on after the run was lost, suspended or finished. */
  throwIfEnded(): void {
    if (this.state === 'lost') throw new RunLostError(this.runId, this.reason!);
    if (this.state === 'suspended') throw new RunSuspendedError(this.runId, 'an earlier step');
    if (this.state === 'finished') throw new RunLostError(this.runId, 'its outcome was already reported');
  }
}
