import { RunLostError, RunSuspendedError } from '../workflow/errors';

/**
 * This worker's hold on one run: the revision its writes must carry, and the abort signal its
 * handler and tasks observe. It ends once: lost (409, heartbeat refused, shutdown) or suspended
 * (the run waits for time, an event or a child, and the worker is done with it for now).
 */
export class RunLease {
  private readonly controller = new AbortController();
  private reason: string | undefined;
  private suspended = false;

  constructor(
    readonly runId: string,
    readonly revision: number,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get lostReason(): string | undefined {
    return this.reason;
  }

  get isLost(): boolean {
    return this.reason !== undefined;
  }

  get isSuspended(): boolean {
    return this.suspended;
  }

  /** Still ours to heartbeat and write to. */
  get isHeld(): boolean {
    return !this.isLost && !this.suspended;
  }

  lose(reason: string): void {
    if (!this.isHeld) return;
    this.reason = reason;
    this.controller.abort(new RunLostError(this.runId, reason));
  }

  suspend(): void {
    if (!this.isHeld) return;
    this.suspended = true;
    this.controller.abort(new RunLostError(this.runId, 'the run suspended'));
  }

  /** Stops a handler that goes on after the run was lost or suspended. */
  throwIfEnded(): void {
    if (this.reason !== undefined) throw new RunLostError(this.runId, this.reason);
    if (this.suspended) throw new RunSuspendedError(this.runId, 'an earlier step');
  }
}
