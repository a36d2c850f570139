import type { ClaimedRun } from '@nest-durable/common';
import { type ClaimParams, type ClaimRow, claimRunsCommon, claimRunsFull, Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';

export type { ClaimParams } from '@app/persistence';

/** A claimed run, with how long it had been ready (null when it was taken over from a dead worker). */
export type TakenRun = ClaimedRun & { readyForSeconds: number | null };

export interface ClaimResult {
  runs: TakenRun[];
  /** Runs found idle past the stall limit, failed instead of taken. */
  stalled: { id: string; workflow: string }[];
  /**
   * Wake-ups that took no run although their queue still has runs waiting (rows other transactions
   * held locked at that moment): the worker gives them back instead of dropping them.
   */
  requeue: { queue: string; wakeup: string }[];
}

/** How long a queue set found controlled goes straight to the full statement. */
const CONTROLLED_MEMORY_MS = 10_000;

/**
 * Claims: how a worker comes to own runs, through the claim API or a transport's wake-ups. One
 * statement for both, so priority, work stealing and the stall limit mean the same in every mode.
 */
@Injectable()
export class ClaimRepository {
  private readonly controlled = new ControlledQueueSets();

  constructor(private readonly db: Database) {}

  /**
   * Takes runs for a worker: from each queue up to its limit (and up to `limit` in all), claims gone idle first,
   * then due runs by priority; fails as `stalled` those idle past the stall limit; hands back wake-ups left unused
   * while their queue still has runs waiting (see claims.sql.ts in the SQL home, which says why it is safe under
   * concurrency).
   *
   * Two statements: the common case's first, which takes nothing and says so when flow_admit finds an active
   * control among the queues or one of them has a claim gone idle; then the full one. A queue set found
   * controlled goes straight to the full one for a while (ControlledQueueSets); one with an idle claim does not
   * (the full statement takes those over now).
   */
  async claim(params: ClaimParams): Promise<ClaimResult> {
    const key = params.queues
      .map((q) => q.queue)
      .sort()
      .join('\n');
    let rows: ClaimRow[] | undefined;
    if (!this.controlled.recalls(key)) {
      rows = await claimRunsCommon(this.db, params);
      if (rows.some((row) => row.kind === 'controlled')) this.controlled.remember(key);
      if (rows.some((row) => row.kind === 'controlled' || row.kind === 'idle')) rows = undefined;
    }
    rows ??= await claimRunsFull(this.db, params);
    return {
      runs: rows.filter((row) => row.kind === 'run').map(takenRun),
      stalled: rows.filter((row) => row.kind === 'stalled').map(({ id, workflow }) => ({ id, workflow })),
      requeue: rows.filter((row) => row.kind === 'requeue').map((row) => ({ queue: row.queue, wakeup: row.wakeup! })),
    };
  }
}

/** A claim statement's row of a run taken, without the columns it has null (no wake-up: a claim; no trace context). */
function takenRun({ kind: _, wakeup, traceparent, tracestate, ...run }: ClaimRow): TakenRun {
  const taken: TakenRun = wakeup === null ? run : { ...run, wakeup };
  if (traceparent === null) return taken;
  taken.traceparent = traceparent;
  if (tracestate !== null) taken.tracestate = tracestate;
  return taken;
}

/**
 * Queue sets the common case's statement found controlled, for CONTROLLED_MEMORY_MS: their claims go
 * straight to the full statement rather than paying for both. Past that they try the common one again
 * (the control may have been lifted). Only a cost: either statement is correct for any queue.
 */
class ControlledQueueSets {
  private readonly until = new Map<string, number>();

  recalls(key: string): boolean {
    const until = this.until.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.until.delete(key);
    return false;
  }

  remember(key: string): void {
    const now = Date.now();
    // Sets no claim asks for again expire: drop them as new ones come.
    for (const [other, until] of this.until) if (until <= now) this.until.delete(other);
    this.until.set(key, now + CONTROLLED_MEMORY_MS);
  }
}
