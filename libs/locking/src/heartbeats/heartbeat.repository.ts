import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** Keeps claims alive. */
@Injectable()
export class HeartbeatRepository {
  constructor(private readonly db: Database) {}

  /**
   * Refreshes the claims this worker still holds and returns the ids it no longer holds. The
   * revision check means a worker whose run was taken over cannot revive its claim.
   */
  async refresh(runs: { id: string; expectedRevision: number }[]): Promise<string[]> {
    if (runs.length === 0) return [];
    const refreshed = await this.db.query<{ id: string }>(
      `UPDATE runs r SET heartbeat_at = now()
         FROM unnest($1::uuid[], $2::integer[]) AS h(id, revision)
        WHERE r.id = h.id AND r.revision = h.revision AND r.status = 'running'
       RETURNING r.id`,
      [runs.map((run) => run.id), runs.map((run) => run.expectedRevision)],
    );
    const alive = new Set(refreshed.map((row) => row.id));
    return runs.filter((run) => !alive.has(run.id)).map((run) => run.id);
  }
}
