import type { ClaimedRun } from '@app/contracts';
import { Database } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { appendHistory, STEP_COLUMNS } from '../runs/run-sql';

export interface ClaimParams {
  queues: string[];
  limit: number;
  workerId: string;
  /** A running run whose last heartbeat is older than this (by the database clock) is taken over. */
  claimMinIdleTimeMs: number;
}

/** A claimed run, with how long it had been ready (null when it was taken over from a dead worker). */
export type TakenRun = ClaimedRun & { readyForSeconds: number | null };

/**
 * Claims: how a worker comes to own runs, through the claim API or a transport's delivery. The
 * claim moves a run to running at revision + 1, which fences off any previous owner.
 */
@Injectable()
export class ClaimRepository {
  constructor(private readonly db: Database) {}

  /**
   * Takes up to `limit` runs: first running runs whose claim went idle (their worker is presumed
   * dead), then due queued or waiting runs, highest priority first, oldest due first.
   *
   * Safe under concurrency: candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent
   * claimers take disjoint rows without waiting on each other, and a locked row's WHERE clause is
   * re-checked against its latest version. Candidates locked but not picked (at most `limit` per
   * queue) are released when the statement commits.
   */
  async claim(params: ClaimParams): Promise<TakenRun[]> {
    return this.db.query<TakenRun>(
      this.takeRuns(`stale AS (
         SELECT id, status FROM runs
          WHERE status = 'running' AND queue = ANY($1)
            AND heartbeat_at < now() - $3 * interval '1 millisecond'
          ORDER BY heartbeat_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), ready AS (
         -- One ordered index scan per queue (runs_ready_idx), merged below: a single scan over
         -- queue = ANY($1) would have to sort every ready run of those queues first.
         SELECT r.id, r.status FROM unnest($1::text[]) AS q(queue)
          CROSS JOIN LATERAL (
                SELECT id, status, priority, due_at FROM runs
                 WHERE status IN ('queued', 'waiting') AND queue = q.queue AND due_at <= now()
                 ORDER BY priority DESC, due_at
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED) r
          ORDER BY r.priority DESC, r.due_at
          LIMIT $2
       ), picked AS (
         (SELECT id, status FROM stale) UNION ALL (SELECT id, status FROM ready) LIMIT $2
       )`),
      [params.queues, params.limit, params.claimMinIdleTimeMs, params.workerId],
    );
  }

  /**
   * Takes runs a transport (Redis) delivered, each at the revision its message carries: a run is
   * taken only if it is still due at that revision, or if its claim went idle (its worker died, so
   * anyone may take it over, as with a claim). Stale messages (the run moved on, another worker has
   * it, or is taking it right now: SKIP LOCKED) take nothing; the caller drops them.
   */
  async take(deliveries: { id: string; revision: number }[], workerId: string, claimMinIdleTimeMs: number): Promise<TakenRun[]> {
    if (deliveries.length === 0) return [];
    return this.db.query<TakenRun>(
      this.takeRuns(`delivered AS (
         SELECT DISTINCT ON (id) id, revision FROM unnest($1::uuid[], $2::integer[]) AS m(id, revision) ORDER BY id, revision DESC
       ), picked AS (
         SELECT r.id, r.status FROM runs r JOIN delivered m ON r.id = m.id
          WHERE (r.revision = m.revision AND r.status IN ('queued', 'waiting') AND r.due_at <= now())
             OR (r.status = 'running' AND r.heartbeat_at < now() - $3 * interval '1 millisecond')
          FOR UPDATE OF r SKIP LOCKED
       )`),
      [deliveries.map((d) => d.id), deliveries.map((d) => d.revision), claimMinIdleTimeMs, workerId],
    );
  }

  /**
   * The claim itself, for the rows of a `picked` CTE (id, status; locked by it), with $3 the idle
   * time and $4 the worker id: moves them to running at revision + 1 (fencing off the previous
   * owner), appends their transitions, resolves suspension steps still waiting (a sleep that ended,
   * an event or child wait that timed out), and returns them with their recorded steps so a
   * re-executed run replays them in the same round trip.
   */
  private takeRuns(picked: string): string {
    return `WITH ${picked}, claimed AS (
         UPDATE runs r
            SET status = 'running', revision = r.revision + 1, claimed_by = $4,
                heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now())
           FROM picked p
          WHERE r.id = p.id
         RETURNING r.id, r.workflow, r.version, r.revision, r.attempt, r.input, r.priority, r.due_at,
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
       )
       SELECT c.id, c.workflow, c.version, c.revision, c.attempt, c.input,
              CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
              coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                          SELECT ${STEP_COLUMNS} FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                          UNION ALL
                          SELECT ${STEP_COLUMNS} FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
         FROM claimed c
        ORDER BY c.from_status = 'running' DESC, c.priority DESC, c.due_at`;
  }
}
