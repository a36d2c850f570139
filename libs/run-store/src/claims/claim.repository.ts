import type { ClaimedRun } from '@nest-durable/common';
import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { CLAIM_COMMON, CLAIM_FULL } from './claim.statement';

export interface ClaimParams {
  /**
   * Queues to take from, each with the most runs to take from it and, for a take, the wake-ups the
   * worker holds for it (one per run wanted; each run taken is attributed to one of them).
   */
  queues: { queue: string; limit: number; wakeups?: string[] }[];
  /** The most runs to take in all. */
  limit: number;
  workerId: string;
  /** A running run whose last heartbeat is older than this (by the database clock) is taken over. */
  claimMinIdleTimeMs: number;
  /** A run whose claim went idle after this many takeovers is failed (`stalled`) instead of taken over again. */
  maxStalls: number;
}

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

type Row = TakenRun & { kind: 'run' | 'stalled' | 'requeue' | 'controlled' | 'idle'; wakeup: string | null };

/**
 * Claims: how a worker comes to own runs, through the claim API or a transport's wake-ups. One
 * statement for both, so priority, work stealing and the stall limit mean the same in every mode.
 */
@Injectable()
export class ClaimRepository {
  private readonly controlled = new ControlledQueueSets();

  constructor(private readonly db: Database) {}

  /**
   * Takes, from each queue, up to its limit of runs (and up to `limit` in all): first running runs
   * whose claim went idle (their worker is presumed dead), then due queued or waiting runs, highest
   * priority first, oldest due first. Moves them to running at revision + 1 (fencing off any previous
   * owner), appends their transitions, resolves suspension steps still waiting (a sleep that ended, an
   * event or child wait that timed out) and returns them with their recorded steps, so a re-executed
   * run replays them in the same round trip. An idle run already taken over `maxStalls` times is
   * failed with reason `stalled` instead (a run that keeps killing its workers ends); it does not use
   * up a slot.
   *
   * Safe under concurrency: candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent
   * claimers take disjoint rows without waiting on each other, and a locked row's WHERE clause is
   * re-checked against its latest version (a run completed or heartbeated just before is not taken).
   * Each queue is scanned on its own, in index order (runs_ready_idx, runs_idle_claims_idx): a single
   * scan over all the queues would have to sort every ready run first. Candidates locked but not
   * picked are released when the statement commits. Because skipped rows look absent, a queue's
   * wake-ups left unused while it still has runs waiting are handed back (`requeue`), counted in the
   * same snapshot, so no wake-up is dropped while its work remains.
   *
   * Flow control (docs/architecture.md, "Flow control"): flow_admit locks the control row of each
   * paused or limited version among the queues and returns what may be taken. Two claimers cannot
   * both take a version's last slot: the second waits for that row lock until the first commits, and
   * counts the slots in a fresh snapshot of its own afterwards (the function is VOLATILE), so it sees
   * the runs the first one took. Every claim also holds a shared admission lock per version
   * (flow_version_lock), so a limit being set waits for the claims in flight. A controlled queue
   * hands back only wake-ups it was admitted to use: a paused or full queue drops them rather than
   * sending them round again (a freed slot, a resume or the next token issues new ones).
   *
   * Two statements (see claim.statement.ts): the common case's first, which takes nothing and says so
   * when flow_admit finds an active control among the queues or one of them has a claim gone idle; then
   * the full one. A queue set found controlled goes straight to the full one for a while
   * (ControlledQueueSets); one with an idle claim does not (the full statement takes those over now).
   */
  async claim(params: ClaimParams): Promise<ClaimResult> {
    const wakeups = params.queues.flatMap(({ queue, wakeups: refs = [] }) => refs.map((ref) => ({ queue, ref })));
    const values = [
      params.queues.map((q) => q.queue),
      params.queues.map((q) => q.limit),
      params.claimMinIdleTimeMs,
      params.workerId,
      params.maxStalls,
      params.limit,
      wakeups.map((w) => w.queue),
      wakeups.map((w) => w.ref),
    ];
    const key = params.queues
      .map((q) => q.queue)
      .sort()
      .join('\n');
    let rows: Row[] | undefined;
    if (!this.controlled.recalls(key)) {
      rows = await this.db.query<Row>(CLAIM_COMMON, values);
      if (rows.some((row) => row.kind === 'controlled')) this.controlled.remember(key);
      if (rows.some((row) => row.kind === 'controlled' || row.kind === 'idle')) rows = undefined;
    }
    rows ??= await this.db.query<Row>(CLAIM_FULL, values);
    return {
      runs: rows.filter((row) => row.kind === 'run').map(({ kind: _, wakeup, ...run }) => (wakeup === null ? run : { ...run, wakeup })),
      stalled: rows.filter((row) => row.kind === 'stalled').map(({ id, workflow }) => ({ id, workflow })),
      requeue: rows.filter((row) => row.kind === 'requeue').map((row) => ({ queue: row.queue, wakeup: row.wakeup! })),
    };
  }
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
