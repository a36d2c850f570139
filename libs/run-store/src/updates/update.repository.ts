import { type JsonValue, type RecordUpdatesRequest, RunAlreadyTerminalError, RunNotFoundError, type RunStatus } from '@nest-durable/common';
import {
  Database,
  findUpdate,
  insertUpdate,
  lockRunningRun,
  lockRunStatus,
  recordAppliedUpdates,
  refusePendingUpdates,
  type UpdateRow,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor } from '../runs/conflicts';

export type { UpdateRow } from '@app/persistence';

/** The statuses a run applies updates in (it may still reach a wait). */
const UNFINISHED: RunStatus[] = ['queued', 'running', 'waiting'];

/**
 * Updates sent to runs (updates.sql.ts says why each statement is safe): a client's send, a worker's record of the
 * updates it applied, and the refusal of those an ended run left pending.
 */
@Injectable()
export class UpdateRepository {
  constructor(private readonly db: Database) {}

  /**
   * Accepts an update to a run that has not ended, under the run's row lock (arrival order), waking the run if it
   * is suspended at a wait; 404 for no such run, 409 `run_terminal` for an ended one (nothing is written).
   */
  async send(update: { id: string; runId: string; name: string; input: JsonValue }): Promise<void> {
    await this.db.transaction(async (tx) => {
      const status = await lockRunStatus(tx, update.runId);
      if (!status) throw new RunNotFoundError(update.runId);
      if (!UNFINISHED.includes(status)) throw new RunAlreadyTerminalError(update.runId, status);
      await insertUpdate(tx, update);
    });
  }

  /** Records what the worker holding the run at `expectedRevision` answered to updates it applied (409 if it no longer holds it). */
  async record(runId: string, request: RecordUpdatesRequest): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (!(await lockRunningRun(tx, runId, request.expectedRevision))) throw await conflictFor(tx, runId, request.expectedRevision);
      await recordAppliedUpdates(
        tx,
        runId,
        request.seq,
        request.updates.map((u) =>
          u.status === 'completed'
            ? { id: u.id, key: u.key, status: u.status, output: u.output ?? null, error: null }
            : { id: u.id, key: u.key, status: u.status, output: null, error: u.error },
        ),
      );
    });
  }

  find(runId: string, id: string): Promise<UpdateRow | undefined> {
    return findUpdate(this.db, runId, id);
  }

  /** Refuses the updates an ended run left pending (a no-op for a run that has not ended). */
  refusePending(runId: string): Promise<void> {
    return refusePendingUpdates(this.db, runId);
  }
}
