import { JsonValue, RunStatus } from '@nest-durable/common';
import {
  Database,
  type HandOffTarget,
  type NewRun,
  type SqlExecutor,
  type StartedRun,
  startHandedPublishedRuns,
  startHandedRuns,
  startPublishedRuns,
  startRuns,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { appendHistory, json, notifyFinished, notifyReady, stalledError, stepsToRerun, wakeParents } from '../runs/run-sql';

export type { HandOffTarget, NewRun, StartedRun } from '@app/persistence';

/** Outcome of a client command on an existing run: its status before, and whether it applied. */
export interface ControlOutcome {
  /** Undefined when the run does not exist. */
  previous?: RunStatus;
  applied: boolean;
}

/**
 * State changes clients ask for (start, cancel, events, wake-ups, retries). Each locks the run row
 * before deciding, so it acts on the run's latest state, and bumps the revision where it takes a run
 * away from its worker (cancel), which fences that worker off.
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
      const [target] = await tx.query<{ status: RunStatus }>(`SELECT status FROM runs WHERE id = $1 FOR UPDATE`, [id]);
      if (!target) return { applied: false };
      if (!['queued', 'running', 'waiting'].includes(target.status)) return { previous: target.status, applied: false };
      for (let pass = 0; pass < 100; pass++) {
        const [{ cancelled }] = await tx.query<{ cancelled: number }>(
          `WITH RECURSIVE tree AS (
             SELECT id FROM runs WHERE id = $1
             UNION
             SELECT r.id FROM runs r JOIN tree t ON r.parent_id = t.id
           ), locked AS (
             SELECT r.id, r.status FROM runs r JOIN tree USING (id)
              WHERE r.status IN ('queued', 'running', 'waiting')
              FOR UPDATE OF r
           ), cancelled AS (
             UPDATE runs r
                SET status = 'cancelled', revision = r.revision + 1, heartbeat_at = NULL,
                    finished_at = now(), updated_at = now()
               FROM locked l
              WHERE r.id = l.id
             RETURNING r.id, r.revision, r.parent_id, r.status, r.output, r.error, l.status AS from_status
           ), history AS (
             ${appendHistory('cancelled', 'from_status', `'cancelled'`)}
           ), top AS (
             SELECT * FROM cancelled WHERE id = $1
           ), ${wakeParents('top')}
           SELECT count(*)::int AS cancelled, ${notifyFinished('cancelled')}, ${notifyReady('woken_parents')} FROM cancelled`,
          [id],
        );
        if (cancelled === 0) break;
      }
      return { previous: target.status, applied: true };
    };
    return on ? work(on) : this.db.transaction(work);
  }

  /**
   * Sends an event to a run. If the run waits for an event of that name, the wait resolves with
   * the data and the run becomes due now; otherwise the event is kept for a later wait.
   */
  async sendEvent(id: string, name: string, data: JsonValue): Promise<ControlOutcome & { delivered: boolean }> {
    return this.db.transaction(async (tx) => {
      const [run] = await tx.query<{ status: RunStatus }>(`SELECT status FROM runs WHERE id = $1 FOR UPDATE`, [id]);
      if (!run) return { applied: false, delivered: false };
      if (!['queued', 'running', 'waiting'].includes(run.status)) return { previous: run.status, applied: false, delivered: false };
      const [delivered] = await tx.query<{ key: string }>(
        `WITH step AS (
           UPDATE tasks SET status = 'completed', output = jsonb_build_object('timedOut', false, 'data', $3::jsonb)
            WHERE run_id = $1 AND kind = 'event' AND status = 'waiting' AND name = $2
           RETURNING key
         ), woken AS (
           UPDATE runs SET due_at = now(), updated_at = now()
            WHERE id = $1 AND status = 'waiting' AND EXISTS (SELECT 1 FROM step)
           RETURNING queue
         )
         SELECT key, ${notifyReady('woken')} FROM step`,
        [id, name, json(data) ?? 'null'],
      );
      await tx.query(`INSERT INTO run_events (run_id, name, data, consumed_by) VALUES ($1, $2, $3, $4)`, [id, name, json(data), delivered?.key ?? null]);
      return { previous: run.status, applied: true, delivered: delivered !== undefined };
    });
  }

  /** Ends a durable sleep early: a run waiting on a sleep step becomes due now. */
  async wake(id: string): Promise<ControlOutcome> {
    return this.db.transaction(async (tx) => {
      // Locked first, in its own statement: a suspension committed while we waited is then visible.
      const [run] = await tx.query<{ status: RunStatus }>(`SELECT status FROM runs WHERE id = $1 FOR UPDATE`, [id]);
      if (!run) return { applied: false };
      const woken = await tx.query(
        `WITH woken AS (
           UPDATE runs r SET due_at = now(), updated_at = now()
            WHERE r.id = $1 AND r.status = 'waiting'
              AND EXISTS (SELECT 1 FROM tasks s WHERE s.run_id = r.id AND s.kind = 'sleep' AND s.status = 'waiting')
           RETURNING r.queue
         )
         SELECT ${notifyReady('woken')} FROM woken`,
        [id],
      );
      return { previous: run.status, applied: woken.length > 0 };
    });
  }

  /**
   * Runs a failed run again as attempt + 1, due now, with its stall count reset. Completed steps are
   * kept, so it resumes from its checkpoints; failed steps run again.
   */
  async retry(id: string, on: SqlExecutor = this.db): Promise<ControlOutcome> {
    const [row] = await on.query<{ previous: RunStatus; applied: boolean }>(
      `WITH target AS (
         SELECT id, status FROM runs WHERE id = $1 FOR UPDATE
       ), retried AS (
         UPDATE runs r
            SET status = 'queued', attempt = r.attempt + 1, revision = r.revision + 1, due_at = now(), stalls = 0,
                finished_at = NULL, updated_at = now()
           FROM target t
          WHERE r.id = t.id AND t.status = 'failed'
         RETURNING r.id, r.revision, r.queue
       ), history AS (
         ${appendHistory('retried', `'failed'`, `'queued'`)}
       ), cleared AS (
         DELETE FROM tasks s USING retried r WHERE s.run_id = r.id AND ${stepsToRerun('s')}
       )
       SELECT t.status AS previous, EXISTS (SELECT 1 FROM retried) AS applied, ${notifyReady('retried')} FROM target t`,
      [id],
    );
    return row ?? { applied: false };
  }

  /**
   * Fails as `stalled` the run last taken with this wake-up (see runs.claimed_via: the running run
   * with that wake-up whose claim was refreshed last) if that claim went idle (its worker is gone):
   * used when dispatch gives up on the wake-up because it was delivered too often. A run a live worker
   * holds is left alone. Returns that run, and whether it was failed. Found among the queue's running
   * runs (runs_idle_claims_idx).
   */
  async failStalledTakenWith(
    queue: string,
    wakeup: string,
    claimMinIdleTimeMs: number,
    message: string,
    on: SqlExecutor = this.db,
  ): Promise<{ runId: string; failed: boolean } | undefined> {
    const [row] = await on.query<{ id: string | null; failed: boolean }>(
      `WITH last_taken AS (
         SELECT id FROM runs WHERE queue = $1 AND claimed_via = $2 AND status = 'running'
          ORDER BY heartbeat_at DESC LIMIT 1
       ), failed AS (
         UPDATE runs
            SET status = 'failed', error = ${stalledError('$4::text')}, revision = revision + 1,
                heartbeat_at = NULL, finished_at = now(), updated_at = now()
          WHERE id = (SELECT id FROM last_taken) AND status = 'running' AND heartbeat_at < now() - $3 * interval '1 millisecond'
         RETURNING id, revision, claimed_by, parent_id, status, output, error
       ), history AS (
         ${appendHistory('failed', `'running'`, `'failed'`, 'claimed_by')}
       ), ${wakeParents('failed')}
       SELECT (SELECT id FROM last_taken) AS id, EXISTS (SELECT 1 FROM failed) AS failed,
              ${notifyFinished('failed')}, ${notifyReady('woken_parents')}`,
      [queue, wakeup, claimMinIdleTimeMs, message],
    );
    return row.id ? { runId: row.id, failed: row.failed } : undefined;
  }
}
