import { prepared, type SqlExecutor } from '../database';
import { type ClaimParams, type ClaimRow, claimValues } from './claims.sql';

/**
 * The claim statement's full form (see claims.sql.ts for what a claim does, why it is safe under concurrency, and
 * the two forms): for any queues, with active controls, claims gone idle and the stall limit. Beyond the common
 * form it has:
 *
 * - `wanted` from flow_admit: per queue, the new runs it may take (`fresh`), whether idle claims may be taken
 *   over, and its version's limits.
 * - `idle`: running runs whose claim went idle (their worker is presumed dead: running, the last heartbeat older
 *   than $3 ms), to take over, locked with SKIP LOCKED as the ready runs are.
 * - The per-key limits (slots or rate), beside `ready`: for queues with a per-key limit, the first ready runs in
 *   order whose key has a free slot and a whole token, locked (`keyed_window`, `key_tokens`, `keyed_fit`, `keyed`);
 *   ready as of the admission's time (flow_admit's admitted_at), the time the keys' tokens are counted near.
 * - `capped`: a version's cap holds across all its queues (shards) in this claim.
 * - The stall limit (`stalled_out`): idle runs past it, failed instead of taken over, with the error of a run the
 *   engine failed because the workers that took it kept stopping without finishing (`RunStalledError`, reason
 *   `stalled`), their history, and the parents waiting on them woken (`parent_steps`, `woken_parents`: the
 *   parent's child step resolves with the child's status and output, and the parent becomes due now). Parents
 *   this statement takes are left alone there: the claim resolves such a parent's timed-out child wait itself,
 *   and one statement must not update a row twice.
 * - The rate limit (`rate_demand`, `bucket`, `rate_wakeup`). Each rate-limited version's token bucket (its row is
 *   locked by flow_admit) is charged with the new runs this statement took. When it ran out while a run still
 *   waits, the next token's time is a due time: a NOTIFY on wf_runs_due arms every coordinator's due timers
 *   (which wake a claim long-poll of the queue then) and, with a publisher, an outbox row not to be published
 *   before it (the wake-up a Redis worker will take it with). When it took runs (new ones or takeovers) and left
 *   whole tokens while a run still waits, the due time is now: a Redis take brings one run per wake-up, so one taken
 *   late (its bucket refilled past a token meanwhile, e.g. by a busy worker) would otherwise leave tokens nothing
 *   comes for. One that took nothing (its rows locked elsewhere) schedules none: it hands its wake-ups back, which
 *   cannot circle for ever. A wake-up already scheduled for later (`rate_wakeup_at`) holds back another, so they do
 *   not multiply with the claimers, unless the new one is due sooner (the rate was raised since).
 * - The per-key rate limit, after `picked` (`key_used`, `rate_delay`, `delayed`, `key_charged`): the keys'
 *   buckets (read and locked by flow_key_tokens in `key_tokens`) are charged with the runs this statement took of
 *   each key, and the window's runs of a key beyond its whole tokens are delayed (`rate_delayed`): the j-th gets
 *   the time of the key's (whole + j)-th token (the whole ones are left to the runs before it, taken now or by
 *   the next claim). A run not delayed before also waits behind the runs its key delayed already: no earlier than
 *   its j-th token after the latest time given to its key (`delayed_until`), so they keep their order. One
 *   delayed before keeps its place: its token came a little after its time (a claim took the run before it late,
 *   and its bucket, full meanwhile, lost that while: at a rate of 1/s or less it holds one token), and it waits
 *   for that token where it is, ahead of those delayed after it (it ranks ahead of runs not delayed in
 *   keyed_window too). The due-time triggers then wake claimers at that time (NOTIFY on wf_runs_due) and, with a
 *   publisher, write the wake-up to publish then (outbox), so they come back without a poll and are not read
 *   again before. Only rows this statement locked are delayed (others are skipped; the next claim sees them). A
 *   bucket row is written only for keys that took or delayed a run: a missing row is a full bucket.
 * - `announced`: NOTIFYs for the stalled runs (wf_run_finished: wakes result long-polls) and the woken parents
 *   (wf_runs_ready: wakes claimers of their queues), delivered at commit, so woken readers see the final rows.
 *
 * The outbox rows are written only when this session's coordinator publishes to a transport (its `wf.dispatch`
 * setting, see PersistenceModule), as the enqueue trigger does.
 */
const CLAIM_FULL = prepared(
  'wf_claim',
  `WITH wanted AS MATERIALIZED (
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
  ), wakeups AS (
    SELECT u.queue, u.ref, row_number() OVER (PARTITION BY u.queue ORDER BY u.i) AS k
      FROM unnest($7::text[], $8::text[]) WITH ORDINALITY AS u(queue, ref, i)
  ), idle AS (
    SELECT s.id, 'running' AS status, s.stalls, w.queue, true AS idle, 0 AS priority, s.heartbeat_at AS since
      FROM wanted w CROSS JOIN LATERAL (
           SELECT x.id, x.stalls, x.heartbeat_at FROM runs x
            WHERE x.status = 'running' AND x.queue = w.queue AND x.heartbeat_at < now() - $3 * interval '1 millisecond'
            ORDER BY x.heartbeat_at
            LIMIT w.n
            FOR NO KEY UPDATE SKIP LOCKED) s
     WHERE w.takeovers
  ), ready AS (
    SELECT r.id, r.status, r.stalls, w.queue, false AS idle, r.priority, r.due_at AS since
      FROM wanted w CROSS JOIN LATERAL (
           SELECT id, status, stalls, priority, due_at FROM runs
            WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= now()
            ORDER BY priority DESC, due_at
            LIMIT w.fresh
            FOR NO KEY UPDATE SKIP LOCKED) r
     WHERE w.per_key IS NULL AND w.key_rate IS NULL
  ), keyed_window AS (
    -- Queues with a per-key limit (slots or rate): the first ready runs in order whose key has a free
    -- slot (keys already full are skipped in the index walk, unlocked), each with its rank in its key.
    -- A key's line: by priority, then its runs delayed for a token before (see rate_delay and delayed), then due time.
    -- Runs due by the admission's time (admitted_at, once flow_admit holds the version's lock), not the
    -- statement's start: the keys' tokens are counted after that lock too (key_tokens), and a delayed run due
    -- at a token that came while this claim waited for the lock must be in the window that token is counted for.
    SELECT w.queue, w.family, w.admitted_at AS window_at, r.id, r.priority, r.due_at, r.concurrency_key, r.rate_delayed,
           row_number() OVER (PARTITION BY w.family, r.concurrency_key ORDER BY r.priority DESC, r.rate_delayed DESC, r.due_at, r.id) AS rank,
           w.per_key - coalesce(w.key_running[array_position(w.key_names, r.concurrency_key)], 0) AS free_slots
      FROM wanted w CROSS JOIN LATERAL (
           SELECT id, priority, due_at, concurrency_key, rate_delayed FROM runs
            WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= w.admitted_at
              AND (concurrency_key IS NULL OR concurrency_key <> ALL (w.full_keys))
            ORDER BY priority DESC, due_at
            LIMIT w.fresh * 4 + 50) r
     WHERE (w.per_key IS NOT NULL OR w.key_rate IS NOT NULL) AND w.fresh > 0
  ), key_tokens AS MATERIALIZED (
    -- Under a per-key rate, the window's keys' buckets: locked and read after flow_admit's lock, in
    -- a fresh snapshot (flow_key_tokens), so claimers of the version take turns on them.
    SELECT k.family, k.rate, t.key, t.tokens, floor(t.tokens + 1e-9) AS whole, t.delayed_until, t.admitted_at
      FROM (SELECT kw.family, max(w.key_rate) AS rate, array_agg(DISTINCT kw.concurrency_key) AS keys
              FROM keyed_window kw JOIN wanted w USING (queue)
             WHERE w.key_rate IS NOT NULL AND kw.concurrency_key IS NOT NULL
             GROUP BY kw.family) k
     CROSS JOIN LATERAL flow_key_tokens(k.family, k.rate, k.keys) t
  ), keyed_fit AS MATERIALIZED (
    -- A run fits when its key has a free slot and a whole token for it (runs without a key always do).
    SELECT k.*, t.whole,
           k.concurrency_key IS NULL OR k.rank <= least(coalesce(k.free_slots, k.rank), coalesce(t.whole, k.rank)) AS fits
      FROM keyed_window k LEFT JOIN key_tokens t ON t.family = k.family AND t.key = k.concurrency_key
  ), keyed AS (
    SELECT r.id, r.status, r.stalls, w.queue, false AS idle, r.priority, r.due_at AS since
      FROM wanted w CROSS JOIN LATERAL (
           SELECT x.id, x.status, x.stalls, x.priority, x.due_at FROM runs x
            WHERE x.id IN (SELECT k.id FROM keyed_fit k WHERE k.queue = w.queue AND k.fits ORDER BY k.priority DESC, k.rate_delayed DESC, k.due_at LIMIT w.fresh)
              AND x.status COLLATE "C" IN ('queued', 'waiting') AND x.due_at <= w.admitted_at
            FOR NO KEY UPDATE SKIP LOCKED) r
     WHERE (w.per_key IS NOT NULL OR w.key_rate IS NOT NULL) AND w.fresh > 0
  ), candidates AS (
    -- (In the common form nothing is idle, but the stalled column stays: it is what types $5 there.)
    SELECT *, idle AND stalls >= $5 AS stalled FROM (SELECT * FROM idle UNION ALL SELECT * FROM ready UNION ALL SELECT * FROM keyed) c
  ), ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.queue ORDER BY c.idle DESC, c.priority DESC, c.since, c.id) AS k
      FROM candidates c WHERE NOT c.stalled
  ), capped AS (
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
  ), taken AS MATERIALIZED (
    SELECT queue, count(*) AS n, count(*) FILTER (WHERE NOT idle) AS fresh FROM picked GROUP BY queue
  ), stalled_out AS (
    UPDATE runs r
       SET status = 'failed', revision = r.revision + 1, heartbeat_at = NULL, finished_at = now(), updated_at = now(),
           error = jsonb_build_object('name', 'RunStalledError', 'reason', 'stalled', 'message', format('the run was taken over %s times after its worker stopped heartbeating, and it stopped again (MAX_STALLS is %s)', r.stalls, $5::integer))
      FROM candidates c
     WHERE r.id = c.id AND c.stalled
    RETURNING r.id, r.workflow, r.version, r.queue, r.revision, r.attempt, r.claimed_by, r.parent_id, r.status, r.output, r.error
  ), stalled_history AS (
    INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id)
    SELECT id, 'running', 'failed', revision, claimed_by FROM stalled_out
  ), parent_steps AS (
    UPDATE tasks t
       SET status = 'completed',
           output = jsonb_build_object('timedOut', false, 'childId', e.id, 'status', e.status,
                                       'output', e.output, 'error', e.error)
      FROM stalled_out e
     WHERE e.parent_id IS NOT NULL AND t.run_id = e.parent_id AND t.child_id = e.id
       AND t.kind = 'child' AND t.status = 'waiting'
       AND e.parent_id NOT IN (SELECT id FROM picked)
    RETURNING t.run_id
  ), woken_parents AS (
    -- A parent still running holds its row lock while it suspends at this very wait (re-sent after updates, or a
    -- wait group's): its row is waited for and re-read once it commits, so it is woken if it suspended. Matching
    -- only 'waiting' would skip it on this statement's snapshot, and the parent would sleep on with its wait done.
    UPDATE runs p SET due_at = CASE WHEN p.status = 'waiting' THEN now() ELSE p.due_at END, updated_at = now()
      FROM parent_steps s
     WHERE p.id = s.run_id AND p.status IN ('running', 'waiting')
    RETURNING p.id, p.queue, p.status
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
  ), rate_demand AS (
    SELECT w.family, w.queue, w.rate, w.tokens, w.admitted_at, w.rate_wakeup_at, coalesce(t.fresh, 0) AS used, coalesce(t.n, 0) AS took,
           CASE WHEN w.takeovers THEN (
             SELECT x.id FROM runs x
              WHERE x.status IN ('queued', 'waiting') AND x.queue = w.queue AND x.due_at <= now() AND x.id NOT IN (SELECT id FROM picked)
              ORDER BY x.priority DESC, x.due_at LIMIT 1) END AS waiting
      FROM wanted w LEFT JOIN taken t USING (queue)
     WHERE w.rate IS NOT NULL
  ), bucket AS (
    UPDATE workflow_controls c
       SET tokens = b.remaining, refilled_at = b.admitted_at, rate_wakeup_at = CASE WHEN b.wake THEN b.next_at ELSE c.rate_wakeup_at END
      FROM (SELECT n.*, n.waiting IS NOT NULL AND (n.remaining < 1 OR n.took > 0)
                        -- (sooner by a millisecond at least: at an unchanged rate, the next token's time only differs by rounding)
                        AND (n.rate_wakeup_at IS NULL OR n.rate_wakeup_at <= n.admitted_at OR n.next_at < n.rate_wakeup_at - interval '1 millisecond') AS wake
              FROM (SELECT d.*, d.admitted_at + greatest(1 - d.remaining, 0) / d.rate * interval '1 second' AS next_at
              FROM (SELECT family, max(rate) AS rate, max(tokens) - sum(used) AS remaining, sum(took) AS took, max(admitted_at) AS admitted_at,
                           max(rate_wakeup_at) AS rate_wakeup_at,
                           (array_agg(queue ORDER BY queue) FILTER (WHERE waiting IS NOT NULL))[1] AS queue,
                           (array_agg(waiting ORDER BY queue) FILTER (WHERE waiting IS NOT NULL))[1] AS waiting
                      FROM rate_demand GROUP BY family) d) n) b
     WHERE c.workflow = split_part(b.family, ':', 1) AND c.version = split_part(b.family, ':', 2)
    RETURNING b.wake, b.queue, b.waiting, b.next_at,
              (SELECT count(*) FROM (SELECT pg_notify('wf_runs_due', (extract(epoch FROM b.next_at) * 1000)::text || ' rate:' || b.family || ' ' || b.queue)
                                      WHERE b.wake) n) AS notified
  ), rate_wakeup AS (
    INSERT INTO outbox (run_id, queue, next_attempt_at)
    SELECT waiting, queue, next_at FROM bucket
     WHERE wake AND coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')
    RETURNING id
  ), key_used AS MATERIALIZED (
    SELECT k.family, k.concurrency_key AS key, count(*) AS n FROM picked p JOIN keyed_fit k USING (id) WHERE NOT p.idle GROUP BY 1, 2
  ), rate_delay AS (
    SELECT x.id, x.rate_delayed FROM runs x JOIN keyed_fit k USING (id)
     WHERE k.rank > k.whole AND x.status COLLATE "C" IN ('queued', 'waiting') AND x.due_at <= k.window_at
     FOR NO KEY UPDATE OF x SKIP LOCKED
  ), delayed AS (
    UPDATE runs r SET due_at = d.due_at, rate_delayed = true, updated_at = now()
      FROM (SELECT l.id, l.family, l.key,
                   CASE WHEN l.rate_delayed THEN l.token_at
                        ELSE greatest(l.token_at, l.delayed_until + l.j_new / l.rate * interval '1 second') END AS due_at
              FROM (SELECT k.id, k.family, k.concurrency_key AS key, x.rate_delayed, t.delayed_until, t.rate,
                           t.admitted_at + (t.whole + row_number() OVER (PARTITION BY k.family, k.concurrency_key ORDER BY k.rank) - t.tokens)
                                           / t.rate * interval '1 second' AS token_at,
                           row_number() OVER (PARTITION BY k.family, k.concurrency_key, x.rate_delayed ORDER BY k.rank) AS j_new
                      FROM rate_delay x JOIN keyed_fit k USING (id)
                      JOIN key_tokens t ON t.family = k.family AND t.key = k.concurrency_key) l) d
     WHERE r.id = d.id
    RETURNING r.id, d.family, d.key, d.due_at
  ), key_charged AS (
    INSERT INTO workflow_key_buckets AS b (workflow, version, key, tokens, refilled_at, delayed_until)
    SELECT split_part(t.family, ':', 1), split_part(t.family, ':', 2), t.key, greatest(t.tokens - coalesce(u.n, 0), 0), t.admitted_at, d.until
      FROM key_tokens t
      LEFT JOIN key_used u ON u.family = t.family AND u.key = t.key
      LEFT JOIN (SELECT family, key, max(due_at) AS until FROM delayed GROUP BY 1, 2) d ON d.family = t.family AND d.key = t.key
     WHERE u.n IS NOT NULL OR d.until IS NOT NULL
    ON CONFLICT (workflow, version, key) DO UPDATE
       SET tokens = excluded.tokens, refilled_at = excluded.refilled_at, delayed_until = greatest(b.delayed_until, excluded.delayed_until)
    RETURNING 1
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
    SELECT l.queue, least(CASE WHEN w.family IS NULL THEN l.n ELSE greatest(w.fresh - coalesce(t.fresh, 0), 0) END,
           CASE WHEN w.per_key IS NULL AND w.key_rate IS NULL THEN (SELECT count(*) FROM (
              SELECT x.id FROM runs x
               WHERE x.status IN ('queued', 'waiting') AND x.queue = l.queue AND x.due_at <= now()
               ORDER BY x.priority DESC, x.due_at LIMIT w.n + l.n) s
             WHERE s.id NOT IN (SELECT id FROM picked UNION ALL SELECT id FROM delayed))
           -- A per-key queue: only runs its window admitted (a key with a free slot and a token) and this statement
           -- neither took nor delayed; runs of full keys are not work for a wake-up, which would circle through Redis.
           ELSE (SELECT count(*) FROM keyed_fit k
                  WHERE k.queue = l.queue AND k.fits AND k.id NOT IN (SELECT id FROM picked UNION ALL SELECT id FROM delayed)) END
         + (SELECT count(*) FROM (
              SELECT x.id FROM runs x WHERE x.status = 'running' AND x.queue = l.queue AND x.heartbeat_at < now() - $3 * interval '1 millisecond'
               ORDER BY x.heartbeat_at LIMIT w.n + l.n) s
             WHERE w.takeovers AND s.id NOT IN (SELECT id FROM candidates WHERE stalled UNION ALL SELECT id FROM picked))) AS runs
      FROM (SELECT queue, count(*) AS n FROM unused GROUP BY queue) l JOIN wanted w USING (queue) LEFT JOIN taken t USING (queue)
  ), announced AS (
    SELECT (SELECT count(*) FROM (SELECT pg_notify('wf_run_finished', id::text) FROM stalled_out) n) AS finished,
           (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken_parents WHERE status = 'waiting') n) AS parents
  )
  SELECT 'run' AS kind, c.id, c.workflow, c.version, c.queue, c.revision, c.attempt, c.input, c.claimed_via AS wakeup,
         c.traceparent, c.tracestate,
         CASE WHEN c.from_status <> 'running' THEN extract(epoch FROM now() - c.due_at)::float8 END AS "readyForSeconds",
         coalesce((SELECT json_agg(s ORDER BY s.seq, s.key) FROM (
                     SELECT key, kind, seq, status, attempts, output, error FROM tasks t WHERE t.run_id = c.id AND t.status <> 'waiting'
                     UNION ALL
                     SELECT key, kind, seq, status, attempts, output, error FROM resolved WHERE resolved.run_id = c.id) s), '[]'::json) AS tasks
    FROM claimed c CROSS JOIN announced
  UNION ALL
  SELECT 'stalled', f.id, f.workflow, f.version, f.queue, f.revision, f.attempt, NULL, NULL, NULL, NULL, NULL, '[]'::json
    FROM stalled_out f CROSS JOIN announced
  UNION ALL
  SELECT 'requeue', NULL, NULL, NULL, n.queue, NULL, NULL, NULL, n.ref, NULL, NULL, NULL, '[]'::json
    FROM unused n JOIN still_waiting s USING (queue)
   WHERE n.rank <= s.runs`,
  { genericPlan: true },
);

/** Claims with the full form: any queues (active controls, claims gone idle, the stall limit). */
export async function claimRunsFull(db: SqlExecutor, params: ClaimParams): Promise<ClaimRow[]> {
  return db.query<ClaimRow>(CLAIM_FULL, claimValues(params));
}
