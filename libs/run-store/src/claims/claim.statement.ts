import type { PreparedStatement } from '@app/persistence';
import { appendHistory, notifyFinished, notifyReady, stalledError, STEP_COLUMNS, wakeParents } from '../runs/run-sql';
import { KEY_RATE_LIMIT_CTES, KEYED_CTES, RATE_LIMIT_CTES } from './flow-control.sql';

/** The condition on `runs x` of a claim of `queue` gone idle: running, its last heartbeat older than $3 ms. */
const goneIdle = (queue: string) => `x.status = 'running' AND x.queue = ${queue} AND x.heartbeat_at < now() - $3 * interval '1 millisecond'`;

/** Running runs whose claim went idle (their worker is presumed dead), to take over: the full form's. */
const IDLE_CTE = `idle AS (
         SELECT s.id, 'running' AS status, s.stalls, w.queue, true AS idle, 0 AS priority, s.heartbeat_at AS since
           FROM wanted w CROSS JOIN LATERAL (
                SELECT x.id, x.stalls, x.heartbeat_at FROM runs x
                 WHERE ${goneIdle('w.queue')}
                 ORDER BY x.heartbeat_at
                 LIMIT w.n
                 FOR NO KEY UPDATE SKIP LOCKED) s
          WHERE w.takeovers
       )`;

/** Idle runs past the stall limit, failed instead of taken over, with their history and waiting parents woken: the full form's. */
const STALLED_CTES = `stalled_out AS (
         UPDATE runs r
            SET status = 'failed', revision = r.revision + 1, heartbeat_at = NULL, finished_at = now(), updated_at = now(),
                error = ${stalledError(`format('the run was taken over %s times after its worker stopped heartbeating, and it stopped again (MAX_STALLS is %s)', r.stalls, $5::integer)`)}
           FROM candidates c
          WHERE r.id = c.id AND c.stalled
         RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.claimed_by, r.parent_id, r.status, r.output, r.error
       ), stalled_history AS (
         ${appendHistory('stalled_out', `'running'`, `'failed'`, 'claimed_by')}
       ), ${wakeParents('stalled_out', 'picked')}`;

/**
 * The claim statement (see ClaimRepository.claim), in two forms built from the same parts: $1 queues, $2
 * their limits, $3 the idle time, $4 the worker id, $5 the stall limit, $6 the total limit, $7/$8 the
 * wake-ups' queues and names.
 *
 * - **Full** (`full` true): for any queues. Every queue goes through flow_admit's limits (pauses,
 *   concurrency, per-key slots and rates, the rate's token bucket and its wake-ups); claims gone idle are
 *   taken over first, or failed past the stall limit.
 * - **Common**: for queues none of whose versions has an active control and none with a claim gone idle.
 *   It calls flow_admit all the same, first (its shared admission locks, then its look at the control rows
 *   in a snapshot taken after them: see flow_admit), and looks for idle claims (an index probe, nothing
 *   locked); it takes nothing when either finds one, and answers `controlled` or `idle` instead, and the
 *   caller runs the full form. For the queues it does take from, the two forms take the same runs (flow_admit
 *   returned nothing: no cap, no key, no rate, takeovers allowed; no idle claim to take first), but its plan
 *   is a fraction of the size, and a plan's size is paid on every execution: initialising the full
 *   plan's CTEs cost about 0.8 ms a take on the bench machine, and leaving out the takeover's and the stall
 *   limit's CTEs saves 0.1-0.4 ms more when the statement's session was idle before it (docs/benchmarks.md).
 *
 * Prepared, and run with its generic plan (see GenericPlanPool): planning it costs more than running it,
 * and its inputs are arrays whose contents no custom plan could use.
 */
function claimStatement(full: boolean): PreparedStatement {
  const wanted = full
    ? `wanted AS MATERIALIZED (
         -- Per queue: how many runs it wants and, when its version has an active control (flow_admit), how
         -- many new runs it may take (fresh), whether idle claims may be taken over (not while paused) and
         -- the version's limits. A queue without one gets fresh = n and no cap.
         -- The per-key rate is read (fresh, flow_key_rate) once flow_admit returned, i.e. holds the lock:
         -- a set-returning function in FROM runs to its end before its first row is joined.
         SELECT w.queue, w.n, f.family, coalesce(f.fresh, w.n) AS fresh, coalesce(f.takeovers, true) AS takeovers,
                f.family_cap, coalesce(f.counts_slot, false) AS counts_slot, f.per_key, f.full_keys, f.key_names, f.key_running,
                f.rate, f.tokens, f.admitted_at, f.rate_wakeup_at, CASE WHEN f.family IS NOT NULL THEN flow_key_rate(f.family) END AS key_rate
           FROM unnest($1::text[], $2::integer[]) AS w(queue, n)
           LEFT JOIN flow_admit($1::text[], $2::integer[]) f USING (queue)
       )`
    : `admission AS MATERIALIZED (
         -- Run before any run is locked (wanted, which everything reads, waits for it).
         SELECT count(*) AS controlled FROM flow_admit($1::text[], $2::integer[])
       ), idle_claims AS MATERIALIZED (
         -- Queues with a claim gone idle (read, not locked: SKIP LOCKED may leave it to another claimer). One
         -- probe of runs_idle_claims_idx per queue: a LATERAL with LIMIT is never flattened into a join, which
         -- a generic plan made on a small table could turn into a scan of every queue's running runs.
         SELECT count(*) AS queues FROM unnest($1::text[]) AS q(queue)
          CROSS JOIN LATERAL (
                SELECT FROM runs x WHERE ${goneIdle('q.queue')} LIMIT 1) x
       ), wanted AS MATERIALIZED (
         SELECT w.queue, w.n, w.n AS fresh FROM unnest($1::text[], $2::integer[]) AS w(queue, n)
          WHERE (SELECT controlled FROM admission) = 0 AND (SELECT queues FROM idle_claims) = 0
       )`;
  const ready = `ready AS (
         SELECT r.id, r.status, r.stalls, w.queue, false AS idle, r.priority, r.due_at AS since
           FROM wanted w CROSS JOIN LATERAL (
                SELECT id, status, stalls, priority, due_at FROM runs
                 WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= now()
                 ORDER BY priority DESC, due_at
                 LIMIT w.fresh
                 FOR NO KEY UPDATE SKIP LOCKED) r${
                   full
                     ? `
          WHERE w.per_key IS NULL AND w.key_rate IS NULL`
                     : ''
                 }
       )`;
  const picked = full
    ? `capped AS (
         -- A version's cap (free slots, tokens) holds across all its queues (shards) in this claim;
         -- a takeover reuses the slot of the run it takes over and needs no new one.
         SELECT r.*, w.counts_slot, w.family, w.family_cap IS NULL OR r.idle
                  OR row_number() OVER (PARTITION BY w.family, r.idle ORDER BY r.priority DESC, r.since, r.id) <= w.family_cap AS admitted
           FROM ranked r JOIN wanted w USING (queue)
          WHERE r.k <= w.n
       ), picked AS (
         SELECT c.id, c.status, c.queue, c.k, c.idle, c.counts_slot FROM capped c
          WHERE c.admitted
          ORDER BY c.idle DESC, c.priority DESC, c.since, c.id
          LIMIT $6
       )`
    : `picked AS (
         SELECT r.id, r.status, r.queue, r.k, r.idle, false AS counts_slot FROM ranked r JOIN wanted w USING (queue)
          WHERE r.k <= w.n
          ORDER BY r.idle DESC, r.priority DESC, r.since, r.id
          LIMIT $6
       )`;
  // Wake-ups left over while their queue still has runs waiting: see still_waiting.
  const readyLeft = `(SELECT count(*) FROM (
                   SELECT x.id FROM runs x
                    WHERE x.status IN ('queued', 'waiting') AND x.queue = l.queue AND x.due_at <= now()
                    ORDER BY x.priority DESC, x.due_at LIMIT w.n + l.n) s
                  WHERE s.id NOT IN (SELECT id FROM picked${full ? ' UNION ALL SELECT id FROM delayed' : ''}))`;
  const idleLeft = `(SELECT count(*) FROM (
                   SELECT x.id FROM runs x WHERE ${goneIdle('l.queue')}
                    ORDER BY x.heartbeat_at LIMIT w.n + l.n) s
                  WHERE w.takeovers AND s.id NOT IN (SELECT id FROM candidates WHERE stalled UNION ALL SELECT id FROM picked))`;
  const stillWaiting = full
    ? `least(CASE WHEN w.family IS NULL THEN l.n ELSE greatest(w.fresh - coalesce(t.fresh, 0), 0) END,
                CASE WHEN w.per_key IS NULL AND w.key_rate IS NULL THEN ${readyLeft}
                -- A per-key queue: only runs its window admitted (a key with a free slot and a token) and this statement
                -- neither took nor delayed; runs of full keys are not work for a wake-up, which would circle through Redis.
                ELSE (SELECT count(*) FROM keyed_fit k
                       WHERE k.queue = l.queue AND k.fits AND k.id NOT IN (SELECT id FROM picked UNION ALL SELECT id FROM delayed)) END
              + ${idleLeft})`
    : `least(l.n, ${readyLeft})`;
  const text = `WITH ${wanted}, wakeups AS (
         SELECT u.queue, u.ref, row_number() OVER (PARTITION BY u.queue ORDER BY u.i) AS k
           FROM unnest($7::text[], $8::text[]) WITH ORDINALITY AS u(queue, ref, i)
       ), ${full ? `${IDLE_CTE}, ` : ''}${ready}, ${full ? `${KEYED_CTES}, ` : ''}candidates AS (
         -- (In the common form nothing is idle, but the stalled column stays: it is what types $5 there.)
         SELECT *, idle AND stalls >= $5 AS stalled FROM (${full ? 'SELECT * FROM idle UNION ALL SELECT * FROM ready UNION ALL SELECT * FROM keyed' : 'SELECT * FROM ready'}) c
       ), ranked AS (
         SELECT c.*, row_number() OVER (PARTITION BY c.queue ORDER BY c.idle DESC, c.priority DESC, c.since, c.id) AS k
           FROM candidates c WHERE NOT c.stalled
       ), ${picked}, taken AS MATERIALIZED (
         SELECT queue, count(*) AS n, count(*) FILTER (WHERE NOT idle) AS fresh FROM picked GROUP BY queue
       ), ${full ? `${STALLED_CTES}, ` : ''}claimed AS (
         UPDATE runs r
            SET status = 'running', revision = r.revision + 1, claimed_by = $4, stalls = r.stalls + p.idle::integer,
                claimed_via = u.ref, heartbeat_at = now(), updated_at = now(), started_at = coalesce(r.started_at, now()),
                holds_slot = p.counts_slot, rate_delayed = false
           FROM picked p LEFT JOIN wakeups u ON u.queue = p.queue AND u.k = p.k
          WHERE r.id = p.id
         RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.input, r.due_at, r.claimed_via,
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
         RETURNING t.run_id, ${STEP_COLUMNS.split(', ')
           .map((column) => `t.${column}`)
           .join(', ')}
       ), ${full ? `${RATE_LIMIT_CTES}, ${KEY_RATE_LIMIT_CTES}, ` : ''}unused AS MATERIALIZED (
         SELECT u.queue, u.ref, u.k - coalesce(t.n, 0) AS rank
           FROM wakeups u LEFT JOIN taken t USING (queue)
          WHERE u.k > coalesce(t.n, 0)
       ), still_waiting AS MATERIALIZED (
         -- Per queue with wake-ups left over, the runs it still has waiting that this statement did not
         -- take (their rows were locked by others): enough of each scan, in index order, to count up to
         -- the leftovers (of its first n + leftover rows, at most n - leftover were picked). A controlled
         -- queue counts no more than it was admitted to take and did not: a wake-up of a paused or full
         -- queue is dropped, not handed back (a freed slot, a resume or the next token brings a new one).
         SELECT l.queue, ${stillWaiting} AS runs
           FROM (SELECT queue, count(*) AS n FROM unused GROUP BY queue) l JOIN wanted w USING (queue) LEFT JOIN taken t USING (queue)
       )${
         full
           ? `, announced AS (
         SELECT ${notifyFinished('stalled_out')} AS finished, ${notifyReady('woken_parents')} AS parents
       )`
           : ''
       }
       SELECT 'run' AS kind, c.id, c.workflow, c.version, c.queue, c.revision, c.attempt, c.input, c.claimed_via AS wakeup,
              CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
              coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                          SELECT ${STEP_COLUMNS} FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                          UNION ALL
                          SELECT ${STEP_COLUMNS} FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
         FROM claimed c${
           full
             ? ` CROSS JOIN announced
       UNION ALL
       SELECT 'stalled', f.id, f.workflow, f.version, f.queue, f.revision, f.attempt, NULL, NULL, NULL, '[]'::json
         FROM stalled_out f CROSS JOIN announced`
             : ''
         }
       UNION ALL
       SELECT 'requeue', NULL, NULL, NULL, n.queue, NULL, NULL, NULL, n.ref, NULL, '[]'::json
         FROM unused n JOIN still_waiting s USING (queue)
        WHERE n.rank <= s.runs${
          full
            ? ''
            : `
       UNION ALL
       SELECT 'controlled', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]'::json
         FROM admission WHERE controlled > 0
       UNION ALL
       SELECT 'idle', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]'::json
         FROM idle_claims WHERE queues > 0`
        }`;
  return { name: full ? 'wf_claim' : 'wf_claim_common', text, genericPlan: true };
}

/** The claim statement for any queues: active controls, claims gone idle, the stall limit. */
export const CLAIM_FULL = claimStatement(true);

/**
 * The claim statement for the common case, queues without an active control or a claim gone idle: answers a
 * `controlled` or an `idle` row, and takes nothing, when one has.
 */
export const CLAIM_COMMON = claimStatement(false);
