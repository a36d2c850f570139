import { JsonValue, PENDING_EVENTS_PER_RUN_MAX, RunStatus, TooManyPendingEventsError } from '@nest-durable/common';
import {
  cancelRunTree,
  Database,
  countPendingEvents,
  deliverEvent,
  failStalledTakenWith,
  type HandOffTarget,
  lockRunStatus,
  type NewRun,
  retryFailedRun,
  type SqlExecutor,
  type StartedRun,
  startHandedPublishedRuns,
  startHandedRuns,
  startPublishedRuns,
  startRuns,
  storeEvent,
  wakeSleepingRun,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';

export type { HandOffTarget, NewRun, StartedRun } from '@app/persistence';

/** Outcome of a client command on an existing run: its status before, and whether it applied. */
export interface ControlOutcome {
  /** Undefined when the run does not exist. */
  previous?: RunStatus;
  applied: boolean;
}

/** The statuses a run can still leave by itself: a command acts only on these. */
const UNFINISHED: RunStatus[] = ['queued', 'running', 'waiting'];

/** A bound on a cancel's passes over a run's tree (each sees what committed before it). */
const CANCEL_PASSES = 100;

/**
 * State changes clients ask for (start, cancel, events, wake-ups, retries). Each locks the run row
 * before deciding, so it acts on the run's latest state, and bumps the revision where it takes a run
 * away from its worker (cancel), which fences that worker off. The statements, and why each is safe
 * under concurrency, are in the SQL home (runs-start.sql.ts, runs-hand-off.sql.ts, run-commands.sql.ts).
 */
@Injectable()
export class RunControlRepository {
  constructor(private readonly db: Database) {}

  /**
   * Inserts queued runs and their first transitions in one statement (one transaction), and wakes
   * idle claimers with one NOTIFY per queue that got a run due now (delivered at commit). Returns
   * the runs inserted, by id: a run whose idempotency key already exists for its workflow is left out.
   * `paused`: a pause of its version or shard holds it.
   *
   * `handedTo`: a claim waiting, on this coordinator, for the runs' queue (its worker, all the queues it
   * waits for, the claims' idle time). Each run due now that flow_hand_off admits is inserted running for
   * that worker instead, claimed in the same commit as its start: it skips the queue, and nobody else is
   * woken for it.
   *
   * `publish` (a coordinator with a publisher, the statement its own transaction): the runs' outbox rows are
   * written by this statement, those due now taken for the caller to publish (`outboxId`).
   */
  async start(runs: NewRun[], on: SqlExecutor = this.db, handedTo?: HandOffTarget, publish = false): Promise<Map<string, StartedRun>> {
    if (publish && on !== this.db) throw new Error('a start publishes its wake-ups only when its statement is its own transaction');
    let rows: StartedRun[];
    if (handedTo === undefined) rows = publish ? await startPublishedRuns(on, runs) : await startRuns(on, runs);
    else rows = publish ? await startHandedPublishedRuns(on, runs, handedTo) : await startHandedRuns(on, runs, handedTo);
    return new Map(rows.map((row) => [row.id, row]));
  }

  /**
   * Cancels a run that is not terminal, and its unfinished descendants (child runs, recursively).
   * A parent waiting on the cancelled run is woken with the child's `cancelled` outcome.
   *
   * The run is locked first, in its own statement, so a child start it was waiting for has
   * committed. Then descendants are cancelled in fresh statements (each sees what committed before
   * it), repeated until a pass finds nothing: a child started while we cancelled its parent cannot be
   * missed, and no new child can start under a cancelled run (child starts need a running parent).
   * With `on`, in that transaction (a schedule cancelling its previous run as it fires).
   */
  async cancel(id: string, on?: SqlExecutor): Promise<ControlOutcome> {
    const work = async (tx: SqlExecutor): Promise<ControlOutcome> => {
      const previous = await lockRunStatus(tx, id);
      if (!previous) return { applied: false };
      if (!UNFINISHED.includes(previous)) return { previous, applied: false };
      for (let pass = 0; pass < CANCEL_PASSES; pass++) {
        if ((await cancelRunTree(tx, id)) === 0) break;
      }
      return { previous, applied: true };
    };
    return on ? work(on) : this.db.transaction(work);
  }

  /**
   * Sends an event to a run. If the run waits for an event of that name (and its match), the wait
   * resolves with the data and the run becomes due now; otherwise the event is kept for a later wait,
   * unless the run keeps PENDING_EVENTS_PER_RUN_MAX already (refused, nothing changed).
   */
  async sendEvent(id: string, name: string, data: JsonValue): Promise<ControlOutcome & { delivered: boolean }> {
    return this.db.transaction(async (tx) => {
      const previous = await lockRunStatus(tx, id);
      if (!previous) return { applied: false, delivered: false };
      if (!UNFINISHED.includes(previous)) return { previous, applied: false, delivered: false };
      const delivered = await deliverEvent(tx, id, name, data);
      if (!delivered && (await countPendingEvents(tx, id, PENDING_EVENTS_PER_RUN_MAX)) >= PENDING_EVENTS_PER_RUN_MAX) {
        throw new TooManyPendingEventsError(id, PENDING_EVENTS_PER_RUN_MAX);
      }
      await storeEvent(tx, id, name, data, delivered ?? null);
      return { previous, applied: true, delivered: delivered !== undefined };
    });
  }

  /** Ends a durable sleep early: a run waiting on a sleep step becomes due now. */
  async wake(id: string): Promise<ControlOutcome> {
    return this.db.transaction(async (tx) => {
      // Locked first, in its own statement: a suspension committed while we waited is then visible.
      const previous = await lockRunStatus(tx, id);
      if (!previous) return { applied: false };
      return { previous, applied: await wakeSleepingRun(tx, id) };
    });
  }

  /**
   * Runs a failed run again as attempt + 1, due now, with its stall count reset. Completed steps are
   * kept, so it resumes from its checkpoints; failed steps run again.
   */
  async retry(id: string, on: SqlExecutor = this.db): Promise<ControlOutcome> {
    return (await retryFailedRun(on, id)) ?? { applied: false };
  }

  /**
   * Fails as `stalled` the run last taken with this wake-up (see runs.claimed_via) if that claim went idle (its
   * worker is gone): used when dispatch gives up on the wake-up because it was delivered too often. A run a live
   * worker holds is left alone. Returns that run, and whether it was failed.
   */
  async failStalledTakenWith(
    queue: string,
    wakeup: string,
    claimMinIdleTimeMs: number,
    message: string,
    on: SqlExecutor = this.db,
  ): Promise<{ runId: string; failed: boolean } | undefined> {
    const row = await failStalledTakenWith(on, { queue, wakeup, claimMinIdleTimeMs, message });
    return row.id ? { runId: row.id, failed: row.failed } : undefined;
  }
}
