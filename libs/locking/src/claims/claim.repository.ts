import type { ClaimedRun } from '@app/contracts';
import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { appendHistory, notifyFinished, notifyReady, stalledError, STEP_COLUMNS, wakeParents } from '../runs/run-sql';

export interface ClaimParams {
  /** Queues to take from, each with the most runs to take from it. */
  queues: { queue: string; limit: number }[];
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
}

/**
 * Claims: how a worker comes to own runs, through the claim API or a transport's wake-up. One
 * statement for both, so priority, work stealing and the stall limit mean the same in every mode.
 */
@Injectable()
export class ClaimRepository {
  constructor(private readonly db: Database) {}

  /**
   * Takes, from each queue, up to its limit of runs (and up to `limit` in all): first running runs
   * whose claim went idle (their worker is presumed dead), then due queued or waiting runs, highest
   * priority first, oldest due first. Moves them to running at revision + 1 (fencing off any previous
   * owner), appends their transitions, resolves suspension steps still waiting (a sleep that ended, an
   * event or child wait that timed out) and returns them with their recorded steps, so a re-executed
   * run replays them in the same round trip. An idle run already taken over `maxStalls` times is
   * failed with reason `stalled` instead (a run that keeps killing its workers ends).
   *
   * Safe under concurrency: candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent
   * claimers take disjoint rows without waiting on each other, and a locked row's WHERE clause is
   * re-checked against its latest version (a run completed or heartbeated just before is not taken).
   * Each queue is scanned on its own, in index order (runs_ready_idx, runs_running_heartbeat_idx): a
   * single scan over all the queues would have to sort every ready run first. Candidates locked but
   * not picked are released when the statement commits.
   */
  async claim(params: ClaimParams): Promise<ClaimResult> {
    const rows = await this.db.query<TakenRun & { stalledOut: boolean; queue: string }>(
      `WITH wanted AS (
         SELECT * FROM unnest($1::text[], $2::integer[]) AS w(queue, n)
       ), stale AS (
         SELECT s.id, 'running' AS status, s.stalls, w.queue, true AS stale, 0 AS priority, s.heartbeat_at AS since
           FROM wanted w CROSS JOIN LATERAL (
                SELECT id, stalls, heartbeat_at FROM runs
                 WHERE status = 'running' AND queue = w.queue AND heartbeat_at < now() - $3 * interval '1 millisecond'
                 ORDER BY heartbeat_at
                 LIMIT w.n
                 FOR UPDATE SKIP LOCKED) s
       ), ready AS (
         SELECT r.id, r.status, r.stalls, w.queue, false AS stale, r.priority, r.due_at AS since
           FROM wanted w CROSS JOIN LATERAL (
                SELECT id, status, stalls, priority, due_at FROM runs
                 WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= now()
                 ORDER BY priority DESC, due_at
                 LIMIT w.n
                 FOR UPDATE SKIP LOCKED) r
       ), ranked AS (
         SELECT c.*, row_number() OVER (PARTITION BY c.queue ORDER BY c.stale DESC, c.priority DESC, c.since) AS k
           FROM (SELECT * FROM stale UNION ALL SELECT * FROM ready) c
       ), picked AS (
         SELECT r.id, r.status, r.stale, r.stale AND r.stalls >= $5 AS stalled_out
           FROM ranked r JOIN wanted w ON w.queue = r.queue
          WHERE r.k <= w.n
          ORDER BY r.stale DESC, r.priority DESC, r.since
          LIMIT $6
       ), stalled_out AS (
         UPDATE runs r
            SET status = 'failed', revision = r.revision + 1, heartbeat_at = NULL, finished_at = now(), updated_at = now(),
                error = ${stalledError(`format('the run was taken over %s times after its worker stopped heartbeating, and it stopped again (MAX_STALLS is %s)', r.stalls, $5::integer)`)}
           FROM picked p
          WHERE r.id = p.id AND p.stalled_out
         RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.claimed_by, r.parent_id, r.status, r.output, r.error
       ), stalled_history AS (
         ${appendHistory('stalled_out', `'running'`, `'failed'`, 'claimed_by')}
       ), ${wakeParents('stalled_out')}, claimed AS (
         UPDATE runs r
            SET status = 'running', revision = r.revision + 1, claimed_by = $4, stalls = r.stalls + p.stale::integer,
                heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now())
           FROM picked p
          WHERE r.id = p.id AND NOT p.stalled_out
         RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.input, r.priority, r.due_at,
                   p.status AS from_status
       ), history AS (
         ${appendHistory('claimed', 'from_status', `'running'`, '$4')}
       ), resolved AS (
         UPDATE tasks t
            SET status = 'completed',
                output = CASE t.kind WHEN 'sleep' THEN NULL WHEN 'retry' THEN t.output
                                     ELSE '{"timedOut": true}'::jsonb END
           FROM claimed c
          WHERE t.run_id = c.id AND t.status = 'waiting'
         RETURNING t.run_id, ${STEP_COLUMNS.split(', ').map((column) => `t.${column}`).join(', ')}
       ), announced AS (
         SELECT ${notifyFinished('stalled_out')} AS finished, ${notifyReady('woken_parents')} AS parents
       )
       SELECT c.id, c.workflow, c.version, c.queue, c.revision, c.attempt, c.input, false AS "stalledOut",
              CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
              coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                          SELECT ${STEP_COLUMNS} FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                          UNION ALL
                          SELECT ${STEP_COLUMNS} FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
         FROM claimed c CROSS JOIN announced
       UNION ALL
       SELECT f.id, f.workflow, f.version, f.queue, f.revision, f.attempt, NULL, true, NULL, '[]'::json
         FROM stalled_out f CROSS JOIN announced`,
      [
        params.queues.map((q) => q.queue),
        params.queues.map((q) => q.limit),
        params.claimMinIdleTimeMs,
        params.workerId,
        params.maxStalls,
        params.limit,
      ],
    );
    const runs = rows.filter((row) => !row.stalledOut).map(({ stalledOut: _, ...run }) => run);
    return { runs, stalled: rows.filter((row) => row.stalledOut).map(({ id, workflow }) => ({ id, workflow })) };
  }
}
