import { RUNS_DUE_CHANNEL } from '@app/outbox';
import { DISPATCHING } from '../runs/run-sql';

/**
 * The rate limit's CTEs in the claim statement. Each rate-limited version's token bucket (its row is
 * locked by flow_admit) is charged with the new runs this statement took. When it ran out while a run
 * still waits, the next token's time is a due time: a NOTIFY on wf_runs_due arms every coordinator's
 * due timers (which wake a claim long-poll of the queue then) and, with a publisher, an outbox row
 * not to be published before it (the wake-up a Redis worker will take it with). At most one is
 * scheduled at a time per version (`rate_wakeup_at`), so wake-ups do not multiply with the claimers.
 */
export const RATE_LIMIT_CTES = `rate_demand AS (
         SELECT w.family, w.queue, w.rate, w.tokens, w.admitted_at, w.rate_wakeup_at, coalesce(t.fresh, 0) AS used,
                CASE WHEN w.takeovers THEN (
                  SELECT x.id FROM runs x
                   WHERE x.status IN ('queued', 'waiting') AND x.queue = w.queue AND x.due_at <= now() AND x.id NOT IN (SELECT id FROM picked)
                   ORDER BY x.priority DESC, x.due_at LIMIT 1) END AS waiting
           FROM wanted w LEFT JOIN taken t USING (queue)
          WHERE w.rate IS NOT NULL
       ), bucket AS (
         UPDATE workflow_controls c
            SET tokens = b.remaining, refilled_at = b.admitted_at, rate_wakeup_at = CASE WHEN b.wake THEN b.next_at ELSE c.rate_wakeup_at END
           FROM (SELECT d.*, d.waiting IS NOT NULL AND d.remaining < 1 AND (d.rate_wakeup_at IS NULL OR d.rate_wakeup_at <= d.admitted_at) AS wake,
                        d.admitted_at + (1 - d.remaining) / d.rate * interval '1 second' AS next_at
                   FROM (SELECT family, max(rate) AS rate, max(tokens) - sum(used) AS remaining, max(admitted_at) AS admitted_at,
                                max(rate_wakeup_at) AS rate_wakeup_at,
                                (array_agg(queue ORDER BY queue) FILTER (WHERE waiting IS NOT NULL))[1] AS queue,
                                (array_agg(waiting ORDER BY queue) FILTER (WHERE waiting IS NOT NULL))[1] AS waiting
                           FROM rate_demand GROUP BY family) d) b
          WHERE c.workflow = split_part(b.family, ':', 1) AND c.version = split_part(b.family, ':', 2)
         RETURNING b.wake, b.queue, b.waiting, b.next_at,
                   (SELECT count(*) FROM (SELECT pg_notify('${RUNS_DUE_CHANNEL}', (extract(epoch FROM b.next_at) * 1000)::text || ' rate:' || b.family || ' ' || b.queue)
                                           WHERE b.wake) n) AS notified
       ), rate_wakeup AS (
         INSERT INTO outbox (run_id, queue, next_attempt_at)
         SELECT waiting, queue, next_at FROM bucket
          WHERE wake AND ${DISPATCHING}
         RETURNING id
       )`;

/**
 * The per-key rate limit's CTEs, after `picked`: the keys' buckets (read and locked by flow_key_tokens
 * in `key_tokens`) are charged with the runs this statement took of each key, and the window's runs of
 * a key beyond its whole tokens are delayed (`rate_delayed`): the j-th gets the time of the key's
 * (whole + j)-th token (the whole ones are left to the runs before it, taken now or by the next claim).
 * A run not delayed before also waits behind the runs its key delayed already: no earlier than its j-th
 * token after the latest time given to its key (`delayed_until`), so they keep their order. One delayed
 * before keeps its place: its token came a little after its time (a claim took the run before it late,
 * and its bucket, full meanwhile, lost that while: at a rate of 1/s or less it holds one token), and it
 * waits for that token where it is, ahead of those delayed after it (it ranks ahead of runs not delayed
 * in keyed_window too). The due-time triggers then wake claimers at that time (NOTIFY on wf_runs_due)
 * and, with a publisher, write the wake-up to publish then (outbox), so they come back without a poll and
 * are not read again before. Only rows this statement locked are delayed (others are skipped; the next
 * claim sees them). A bucket row is written only for keys that took or delayed a run: a missing row is a
 * full bucket.
 */
export const KEY_RATE_LIMIT_CTES = `key_used AS MATERIALIZED (
         SELECT k.family, k.concurrency_key AS key, count(*) AS n FROM picked p JOIN keyed_fit k USING (id) WHERE NOT p.idle GROUP BY 1, 2
       ), rate_delay AS (
         SELECT x.id, x.rate_delayed FROM runs x
          WHERE x.id IN (SELECT k.id FROM keyed_fit k WHERE k.rank > k.whole)
            AND x.status IN ('queued', 'waiting') AND x.due_at <= now()
          FOR NO KEY UPDATE SKIP LOCKED
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
       )`;

/**
 * The per-key limits' CTEs (slots or rate), beside `ready`: for queues with a per-key limit, the first ready
 * runs in order whose key has a free slot and a whole token, locked (`keyed`). After `wanted`.
 */
export const KEYED_CTES = `keyed_window AS (
         -- Queues with a per-key limit (slots or rate): the first ready runs in order whose key has a free
         -- slot (keys already full are skipped in the index walk, unlocked), each with its rank in its key.
         -- A key's line: by priority, then its runs delayed for a token before (see KEY_RATE_LIMIT_CTES), then due time.
         SELECT w.queue, w.family, r.id, r.priority, r.due_at, r.concurrency_key, r.rate_delayed,
                row_number() OVER (PARTITION BY w.family, r.concurrency_key ORDER BY r.priority DESC, r.rate_delayed DESC, r.due_at, r.id) AS rank,
                w.per_key - coalesce(w.key_running[array_position(w.key_names, r.concurrency_key)], 0) AS free_slots
           FROM wanted w CROSS JOIN LATERAL (
                SELECT id, priority, due_at, concurrency_key, rate_delayed FROM runs
                 WHERE status IN ('queued', 'waiting') AND queue = w.queue AND due_at <= now()
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
                   AND x.status IN ('queued', 'waiting') AND x.due_at <= now()
                 FOR NO KEY UPDATE SKIP LOCKED) r
          WHERE (w.per_key IS NOT NULL OR w.key_rate IS NOT NULL) AND w.fresh > 0
       )`;
