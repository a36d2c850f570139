import type { ClaimedRun } from '@nest-durable/common';
import { prepared, type SqlExecutor } from '../database';

/*
 * The claim statement: how a worker comes to own runs, through the claim API or a transport's wake-ups. One
 * statement for both, so priority, work stealing and the stall limit mean the same in every mode. It takes, from
 * each queue, up to its limit of runs (and up to $6 in all): first running runs whose claim went idle (their
 * worker is presumed dead), then due queued or waiting runs, highest priority first, oldest due first. It moves
 * them to running at revision + 1 (fencing off any previous owner), appends their transitions, resolves
 * suspension steps still waiting whose time came (a sleep that ended, an event or child wait that timed out; a wait
 * whose time has not come stays waiting: its run was woken to apply updates there, see updates.sql.ts; and not a wait
 * group's branches, which wait on until their group is decided: GroupRepository) and returns them
 * with their recorded steps, so a re-executed run replays them in the same round trip. An idle run already
 * taken over $5 times is failed with reason `stalled` instead (a run that keeps killing its workers ends); it
 * does not use up a slot.
 *
 * Safe under concurrency: candidates are locked with FOR NO KEY UPDATE SKIP LOCKED, so concurrent claimers take
 * disjoint rows without waiting on each other, and a locked row's WHERE clause is re-checked against its latest
 * version (a run completed or heartbeated just before is not taken). Each queue is scanned on its own, in index
 * order (runs_ready_idx, runs_idle_claims_idx): a single scan over all the queues would have to sort every ready
 * run first. Candidates locked but not picked are released when the statement commits. Because skipped rows look
 * absent, a queue's wake-ups left unused while it still has runs waiting are handed back (`requeue`), counted in
 * the same snapshot, so no wake-up is dropped while its work remains.
 *
 * Flow control (docs/architecture.md, "Flow control"): flow_admit locks the control row of each paused or limited
 * version among the queues and returns what may be taken. Two claimers cannot both take a version's last slot:
 * the second waits for that row lock until the first commits, and counts the slots in a fresh snapshot of its own
 * afterwards (the function is VOLATILE), so it sees the runs the first one took. Every claim also holds a shared
 * admission lock per version (flow_version_lock), so a limit being set waits for the claims in flight. A
 * controlled queue hands back only wake-ups it was admitted to use: a paused or full queue drops them rather than
 * sending them round again (a freed slot, a resume or the next token issues new ones).
 *
 * Two forms, two whole statements with the same parameters ($1 queues, $2 their limits, $3 the idle time, $4 the
 * worker id, $5 the stall limit, $6 the total limit, $7/$8 the wake-ups' queues and names, $9 the worker's build
 * id):
 *
 * - **Full** (claims-full.sql.ts): for any queues. Every queue goes through flow_admit's limits (pauses,
 *   concurrency, per-key slots and rates, the rate's token bucket and its wake-ups); claims gone idle are
 *   taken over first, or failed past the stall limit.
 * - **Common** (here): for queues none of whose versions has an active control and none with a claim gone idle.
 *   It calls flow_admit all the same, first (its shared admission locks, then its look at the control rows
 *   in a snapshot taken after them: see flow_admit), and looks for idle claims (an index probe, nothing
 *   locked); it takes nothing when either finds one, and answers `controlled` or `idle` instead, and the
 *   caller runs the full form. For the queues it does take from, the two forms take the same runs (flow_admit
 *   returned nothing: no cap, no key, no rate, takeovers allowed; no idle claim to take first), but its plan
 *   is a fraction of the size, and a plan's size is paid on every execution: initialising the full
 *   plan's CTEs cost about 0.8 ms a take on the bench machine, and leaving out the takeover's and the stall
 *   limit's CTEs saves 0.1-0.4 ms more when the statement's session was idle before it (docs/benchmarks.md).
 *
 * Both are prepared, and run with their generic plan (see GenericPlanPool): planning them costs more than running
 * them, and their inputs are arrays whose contents no custom plan could use.
 */

export interface ClaimParams {
  /**
   * Queues to take from, each with the most runs to take from it and, for a take, the wake-ups the
   * worker holds for it (one per run wanted; each run taken is attributed to one of them).
   */
  queues: { queue: string; limit: number; wakeups?: string[] }[];
  /** The most runs to take in all. */
  limit: number;
  workerId: string;
  /**
   * The worker's build id, recorded on the runs it takes (`runs.build_id`: the build that ran a run last); null
   * for a worker that does not send one. A parameter of the statement rather than a read of the worker registry:
   * a worker may take runs before its first registration lands, and it costs the claim nothing more.
   */
  buildId: string | null;
  /** A running run whose last heartbeat is older than this (by the database clock) is taken over. */
  claimMinIdleTimeMs: number;
  /** A run whose claim went idle after this many takeovers is failed (`stalled`) instead of taken over again. */
  maxStalls: number;
}

/**
 * A row of a claim statement: a run taken (`run`, with how long it had been ready, null when it was taken over
 * from a dead worker, and the wake-up it was taken with), a run failed past the stall limit (`stalled`), a
 * wake-up to hand back (`requeue`: its queue and `wakeup`), or the common form's refusal (`controlled`, `idle`).
 */
export type ClaimRow = Omit<ClaimedRun, 'traceparent' | 'tracestate'> & {
  kind: 'run' | 'stalled' | 'requeue' | 'controlled' | 'idle';
  wakeup: string | null;
  /** The run's trace context (runs.traceparent, runs.tracestate: null when its start was not traced). */
  traceparent: string | null;
  tracestate: string | null;
  readyForSeconds: number | null;
};

/** Both forms' parameters, $1-$9. */
export function claimValues(params: ClaimParams): unknown[] {
  const wakeups = params.queues.flatMap(({ queue, wakeups: refs = [] }) => refs.map((ref) => ({ queue, ref })));
  return [
    params.queues.map((q) => q.queue),
    params.queues.map((q) => q.limit),
    params.claimMinIdleTimeMs,
    params.workerId,
    params.maxStalls,
    params.limit,
    wakeups.map((w) => w.queue),
    wakeups.map((w) => w.ref),
    params.buildId,
  ];
}

/**
 * The common form. `wanted` is empty, so nothing is taken, when flow_admit returned a row (an active control:
 * `controlled`) or a queue has a claim gone idle (`idle`).
 */
const CLAIM_COMMON = prepared(
  'wf_claim_common',
  `WITH admission AS MATERIALIZED (
    -- Run before any run is locked (wanted, which everything reads, waits for it).
    SELECT count(*) AS controlled FROM flow_admit($1::text[], $2::integer[])
  ), idle_claims AS MATERIALIZED (
    -- Queues with a claim gone idle (read, not locked: SKIP LOCKED may leave it to another claimer). One
    -- probe of runs_idle_claims_idx per queue: a LATERAL with LIMIT is never flattened into a join, which
    -- a generic plan made on a small table could turn into a scan of every queue's running runs.
    SELECT count(*) AS queues FROM unnest($1::text[]) AS q(queue)
     CROSS JOIN LATERAL (
           SELECT FROM runs x WHERE x.status = 'running' AND x.queue = q.queue AND x.heartbeat_at < now() - $3 * interval '1 millisecond' LIMIT 1) x
  ), wanted AS MATERIALIZED (
    SELECT w.queue, w.n, w.n AS fresh FROM unnest($1::text[], $2::integer[]) AS w(queue, n)
     WHERE (SELECT controlled FROM admission) = 0 AND (SELECT queues FROM idle_claims) = 0
  ), wakeups AS (
    SELECT u.queue, u.ref, row_number() OVER (PARTITION BY u.queue ORDER BY u.i) AS k
      FROM unnest($7::text[], $8::text[]) WITH ORDINALITY AS u(queue, ref, i)
  ), ready AS (
    SELECT r.id, r.status, r.stalls, w.queue, false AS idle, r.priority, r.due_at AS since
      FROM wanted w CROSS JOIN LATERAL (
           SELECT id, status, stalls, priority, due_at FROM runs
            WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= now()
            ORDER BY priority DESC, due_at
            LIMIT w.fresh
            FOR NO KEY UPDATE SKIP LOCKED) r
  ), candidates AS (
    -- (In the common form nothing is idle, but the stalled column stays: it is what types $5 there.)
    SELECT *, idle AND stalls >= $5 AS stalled FROM (SELECT * FROM ready) c
  ), ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.queue ORDER BY c.idle DESC, c.priority DESC, c.since, c.id) AS k
      FROM candidates c WHERE NOT c.stalled
  ), picked AS (
    SELECT r.id, r.status, r.queue, r.k, r.idle, false AS counts_slot FROM ranked r JOIN wanted w USING (queue)
     WHERE r.k <= w.n
     ORDER BY r.idle DESC, r.priority DESC, r.since, r.id
     LIMIT $6
  ), taken AS MATERIALIZED (
    SELECT queue, count(*) AS n, count(*) FILTER (WHERE NOT idle) AS fresh FROM picked GROUP BY queue
  ), claimed AS (
    UPDATE runs r
       SET status = 'running', revision = r.revision + 1, claimed_by = $4, build_id = $9, stalls = r.stalls + p.idle::integer,
           claimed_via = u.ref, heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now()),
           holds_slot = p.counts_slot, rate_delayed = false
      FROM picked p LEFT JOIN wakeups u ON u.queue = p.queue AND u.k = p.k
     WHERE r.id = p.id
    RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.input, r.due_at, r.claimed_via,
              r.traceparent, r.tracestate, p.status AS from_status
  ), history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, from_status, 'running', revision, $4 FROM claimed
  ), resolved AS (
    UPDATE tasks t
       SET status = 'completed',
           output = CASE t.kind WHEN 'sleep' THEN NULL WHEN 'retry' THEN t.output
                                ELSE '{"timedOut": true}'::jsonb END
      FROM claimed c
     WHERE t.run_id = c.id AND t.status = 'waiting' AND t.wake_at <= now() AND NOT starts_with(t.key, 'group:')
    RETURNING t.run_id, t.key, t.kind, t.seq, t.status, t.attempts, t.output, t.error
  ), unused AS MATERIALIZED (
    SELECT u.queue, u.ref, u.k - coalesce(t.n, 0) AS rank
      FROM wakeups u LEFT JOIN taken t USING (queue)
     WHERE u.k > coalesce(t.n, 0)
  ), still_waiting AS MATERIALIZED (
    -- Per queue with wake-ups left over, the runs it still has waiting that this statement did not
    -- take (their rows were locked by others): enough of each scan, in index order, to count up to
    -- the leftovers (of its first n + leftover rows, at most n - leftover were picked). A controlled
    -- queue counts no more than it was admitted to take and did not: a wake-up of a paused or full
    -- queue is dropped, not handed back (a freed slot, a resume or the next token brings a new one).
    SELECT l.queue, least(l.n, (SELECT count(*) FROM (
              SELECT x.id FROM runs x
               WHERE x.status IN ('queued', 'waiting') AND x.queue = l.queue AND x.due_at <= now()
               ORDER BY x.priority DESC, x.due_at LIMIT w.n + l.n) s
             WHERE s.id NOT IN (SELECT id FROM picked))) AS runs
      FROM (SELECT queue, count(*) AS n FROM unused GROUP BY queue) l JOIN wanted w USING (queue) LEFT JOIN taken t USING (queue)
  )
  SELECT 'run' AS kind, c.id, c.workflow, c.version, c.queue, c.revision, c.attempt, c.input, c.claimed_via AS wakeup,
         c.traceparent, c.tracestate,
         CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
         coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                     SELECT key, kind, seq, status, attempts, output, error FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                     UNION ALL
                     SELECT key, kind, seq, status, attempts, output, error FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
    FROM claimed c
  UNION ALL
  SELECT 'requeue', NULL, NULL, NULL, n.queue, NULL, NULL, NULL, n.ref, NULL, NULL, NULL, '[]'::json
    FROM unused n JOIN still_waiting s USING (queue)
   WHERE n.rank <= s.runs
  UNION ALL
  SELECT 'controlled', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]'::json
    FROM admission WHERE controlled > 0
  UNION ALL
  SELECT 'idle', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]'::json
    FROM idle_claims WHERE queues > 0`,
  { genericPlan: true },
);

/** Claims with the common form (see above): for queues without an active control or a claim gone idle. */
export async function claimRunsCommon(db: SqlExecutor, params: ClaimParams): Promise<ClaimRow[]> {
  return db.query<ClaimRow>(CLAIM_COMMON, claimValues(params));
}
