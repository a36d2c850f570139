import type { SqlExecutor } from '../database';

/**
 * The queue of a schedule's entry in UPCOMING_DUE_TIMES (its `runId` is the schedule's id): a schedule fires
 * rather than wakes a queue. No run's queue can be this (an identifier starts with a letter or digit).
 */
export const SCHEDULE_QUEUE = '~schedule';

/** A run (or a schedule) that comes due at `at`: epoch milliseconds (with a fraction) by the database clock. */
export interface DueRun {
  runId: string;
  queue: string;
  at: number;
}

const UPCOMING_DUE_TIMES = `(SELECT id::text AS "runId", queue, (extract(epoch FROM due_at) * 1000)::float8 AS at
    FROM runs
   WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity'
     AND due_at > now() AND due_at <= now() + $1 * interval '1 millisecond'
   ORDER BY due_at
   LIMIT $2)
 UNION ALL
 (SELECT id::text, '~schedule', (extract(epoch FROM next_run_at) * 1000)::float8
    FROM schedules
   WHERE next_run_at IS NOT NULL AND next_run_at <= now() + $1 * interval '1 millisecond'
   ORDER BY next_run_at
   LIMIT $2)
 ORDER BY at
 LIMIT $2`;

/**
 * Queued and waiting runs due within the next `horizonMs`, and schedules that fire by then (overdue
 * ones too: nobody else fires them), soonest first, at most `limit`. Range scans of runs_due_idx
 * (see docs/architecture.md, Query plans) and schedules_next_run_idx; `due_at <> 'infinity'` is
 * spelled out because the planner cannot prove it from `due_at <= now() + …` to use the partial index.
 * A read, on one snapshot: a due time written after it is announced by the wf_runs_due NOTIFY at its commit.
 */
export function upcomingDueTimes(db: SqlExecutor, horizonMs: number, limit: number): Promise<DueRun[]> {
  return db.query<DueRun>(UPCOMING_DUE_TIMES, [horizonMs, limit]);
}
