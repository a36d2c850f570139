import type { SqlExecutor } from '../database';

/*
 * The republish daemon's statements (one coordinator runs it at a time: leader election). Redis contents are
 * disposable; the database is the truth: these find the queues whose runs wait too long and write outbox rows
 * for the wake-ups missing, which the enqueuer publishes like any other.
 */

export interface QueueNeed {
  queue: string;
  /** Runs that need a wake-up: due and not taken, or held by a claim that went idle. */
  needed: number;
  /** Wake-ups for the queue still in the outbox (to publish now, or being retried). */
  coming: number;
}

const QUEUES_NEEDING_WAKEUPS = `WITH due AS (
    -- runs_due_idx (its predicate needs the explicit due_at <> 'infinity'): only due runs are read.
    SELECT queue, count(*)::int AS runs, min(due_at) AS oldest FROM runs
     WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity' AND due_at <= now()
     GROUP BY queue
  ), stale AS (
    SELECT queue, count(*)::int AS runs FROM runs
     WHERE status = 'running' AND heartbeat_at < now() - $2 * interval '1 millisecond'
     GROUP BY queue
  ), coming AS (
    SELECT queue, count(*)::int AS rows FROM outbox
     WHERE status IN ('pending', 'retry', 'in_flight') AND (next_attempt_at <= now() OR attempt_count > 0)
     GROUP BY queue
  )
  SELECT q.queue, CASE WHEN f.paused THEN 0 ELSE least(coalesce(d.runs, 0) + coalesce(s.runs, 0), f.cap) END::int AS needed,
         coalesce(c.rows, 0) AS coming
    FROM (SELECT queue FROM due WHERE oldest <= now() - $1 * interval '1 millisecond' UNION SELECT queue FROM stale) q
    LEFT JOIN due d USING (queue) LEFT JOIN stale s USING (queue) LEFT JOIN coming c USING (queue)
    LEFT JOIN LATERAL (SELECT bool_or(c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)) AS paused,
         min(CASE WHEN c.concurrency IS NOT NULL
                  THEN greatest(c.concurrency - (SELECT count(*) FROM runs r
                                                  WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot), 0)
                  ELSE 1 END) AS cap
    FROM workflow_controls c
   WHERE c.workflow = split_part(q.queue, ':', 1) AND c.version = split_part(q.queue, ':', 2) AND c.active) f ON true
   ORDER BY q.queue`;

/**
 * Queues with a run due and untaken for `afterMs` (REPUBLISH_AFTER_MS) or held by a claim idle for `idleMs`,
 * with how many runs need a wake-up and how many wake-ups the outbox still holds for them. Outbox rows waiting
 * for a far-off time (an event wait's timeout, say) are not counted: they are not for now. What a queue's flow
 * control (docs/architecture.md, "Flow control") lets it use caps `needed` (the lateral `f`): paused, none;
 * under a concurrency limit, the free slots; under a rate or per-key limit only, one (the wake-ups a freed
 * slot or the next token issues do the rest). More would only be dropped by the takes, and republished again
 * next round. Takes no lock: a run taken meanwhile leaves a wake-up to spare, which the take that reads it
 * finds nothing for and acknowledges (a stale wake-up, as after any duplicate publish).
 */
export function queuesNeedingWakeups(db: SqlExecutor, afterMs: number, idleMs: number): Promise<QueueNeed[]> {
  return db.query<QueueNeed>(QUEUES_NEEDING_WAKEUPS, [afterMs, idleMs]);
}

const REPUBLISH_WAKEUPS = `INSERT INTO outbox (run_id, queue)
  SELECT c.id, m.queue FROM unnest($1::text[], $2::integer[]) AS m(queue, n)
   CROSS JOIN LATERAL (
         (SELECT id FROM runs
           WHERE status = 'running' AND queue = m.queue AND heartbeat_at < now() - $3 * interval '1 millisecond'
           ORDER BY heartbeat_at LIMIT m.n)
         UNION ALL
         (SELECT id FROM runs
           WHERE status IN ('queued', 'waiting') AND queue = m.queue AND due_at <= now()
           ORDER BY due_at LIMIT m.n)
         LIMIT m.n) c
  RETURNING queue`;

/**
 * Writes `count` outbox wake-ups for each queue, each for a run that needs one (a claim idle for `idleMs` first,
 * then the runs due longest); returns the queue of each row written. Wake-ups are interchangeable within a
 * queue, so the run named does not matter; a run taken since is skipped by the take, as any stale wake-up.
 */
export function republishWakeups(db: SqlExecutor, missing: { queue: string; count: number }[], idleMs: number): Promise<{ queue: string }[]> {
  return db.query<{ queue: string }>(REPUBLISH_WAKEUPS, [missing.map((m) => m.queue), missing.map((m) => m.count), idleMs]);
}
