import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { type DueRun, SCHEDULE_QUEUE } from './due-schedule';

/** The due timers' reads: nothing here changes state. */
@Injectable()
export class DueTimesRepository {
  constructor(private readonly db: Database) {}

  /**
   * Queued and waiting runs due within the next `horizonMs`, and schedules that fire by then (overdue
   * ones too: nobody else fires them), soonest first, at most `limit`. Range scans of runs_due_idx
   * (see docs/architecture.md, Query plans) and schedules_next_run_idx; `due_at <> 'infinity'` is
   * spelled out because the planner cannot prove it from `due_at <= now() + …` to use the partial index.
   */
  upcoming(horizonMs: number, limit: number): Promise<DueRun[]> {
    return this.db.query<DueRun>(
      `(SELECT id::text AS "runId", queue, (extract(epoch FROM due_at) * 1000)::float8 AS at
          FROM runs
         WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity'
           AND due_at > now() AND due_at <= now() + $1 * interval '1 millisecond'
         ORDER BY due_at
         LIMIT $2)
       UNION ALL
       (SELECT id::text, '${SCHEDULE_QUEUE}', (extract(epoch FROM next_run_at) * 1000)::float8
          FROM schedules
         WHERE next_run_at IS NOT NULL AND next_run_at <= now() + $1 * interval '1 millisecond'
         ORDER BY next_run_at
         LIMIT $2)
       ORDER BY at
       LIMIT $2`,
      [horizonMs, limit],
    );
  }

  /** The database clock now (not the transaction start), epoch ms. */
  async clock(): Promise<number> {
    const [row] = await this.db.query<{ now: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`);
    return row.now;
  }
}
