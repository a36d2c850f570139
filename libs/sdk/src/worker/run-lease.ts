import { RunLostError } from '../workflow/errors';

/**
 * This worker's hold on one run: the revision its writes must carry, and the abort signal its
 * handler and tasks observe. Once lost (409, heartbeat refused, shutdown) it stays lost.
 */
export class RunLease {
  private readonly controller = new AbortController();
  private lostReason: string | undefined;

  constructor(
    readonly runId: string,
    readonly revision: number,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get isLost(): boolean {
    return this.lostReason !== undefined;
  }

  lose(reason: string): void {
    if (this.lostReason !== undefined) return;
    this.lostReason = reason;
    this.controller.abort(new RunLostError(this.runId, reason));
  }

  throwIfLost(): void {
    if (this.lostReason !== undefined) throw new RunLostError(this.runId, this.lostReason);
  }
}
