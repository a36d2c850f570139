import { LeaderElection, SingletonDaemon } from '@app/locking';
import { Database } from '@app/persistence';
import { type Publisher, PUBLISHER } from '@app/streams';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';

const BATCH = 1_000;
/** Its interval in @nestjs/schedule's registry (from the injected config, so not a decorator's). */
const INTERVAL = 'republish';

/**
 * What a queue's flow control (docs/architecture.md, "Flow control") lets it use, for the query below
 * (`q.queue`): paused, none; under a concurrency limit, the free slots; under a rate or per-key limit
 * only, one (the wake-ups a freed slot or the next token issues do the rest). More would only be
 * dropped by the takes, and republished again next round.
 */
const FLOW_CAP = `SELECT bool_or(c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)) AS paused,
         min(CASE WHEN c.concurrency IS NOT NULL
                  THEN greatest(c.concurrency - (SELECT count(*) FROM runs r
                                                  WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot), 0)
                  ELSE 1 END) AS cap
    FROM workflow_controls c
   WHERE c.workflow = split_part(q.queue, ':', 1) AND c.version = split_part(q.queue, ':', 2) AND c.active`;

interface QueueNeed {
  queue: string;
  /** Runs that need a wake-up: due and not taken, or held by a claim that went idle. */
  needed: number;
  /** Wake-ups for the queue still in the outbox (to publish now, or being retried). */
  coming: number;
}

/**
 * Redis contents are disposable; the database is the truth. Periodically tops up the wake-ups of
 * every queue that has runs waiting too long (due and untaken for REPUBLISH_AFTER_MS, or held by a
 * claim that went idle): to as many as it has such runs, counting the wake-ups still in the outbox
 * and those Redis holds undelivered, never beyond. So a Redis that lost its contents (FLUSHALL, a
 * failover, a restart without persistence) gets them back, and a queue nobody reads holds at most
 * one wake-up per waiting run however often this runs. Wake-ups are interchangeable within a queue,
 * so counting is enough. One coordinator runs it at a time.
 */
@Injectable()
export class RepublishDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'republish';
  private readonly logger = new Logger(RepublishDaemon.name);
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly election: LeaderElection,
    @Inject(PUBLISHER) private readonly publisher: Publisher,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    const timer = setInterval(() => {
      this.running ??= this.republish()
        .then(
          () => undefined,
          (error: Error) => this.logger.warn(`republish failed: ${error.message}`),
        )
        .finally(() => (this.running = undefined));
    }, this.config.republishIntervalMs);
    this.scheduler.addInterval(INTERVAL, timer);
  }

  async stop(): Promise<void> {
    // At shutdown @nestjs/schedule has cleared its intervals already, before leader election steps down.
    if (this.scheduler.doesExist('interval', INTERVAL)) this.scheduler.deleteInterval(INTERVAL);
    await this.running;
  }

  /** Writes outbox rows for the wake-ups missing; returns how many. */
  async republish(): Promise<number> {
    const needs = await this.queuesNeedingWakeups();
    if (needs.length === 0) return 0;
    const undelivered = await this.publisher.undelivered(needs.map((need) => need.queue));
    let budget = BATCH;
    const missing = needs.flatMap(({ queue, needed, coming }) => {
      const count = Math.min(budget, needed - coming - (undelivered.get(queue) ?? 0));
      if (count <= 0) return [];
      budget -= count;
      return [{ queue, count }];
    });
    if (missing.length === 0) return 0;
    const rows = await this.db.query<{ queue: string }>(
      `INSERT INTO outbox (run_id, queue)
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
       RETURNING queue`,
      [missing.map((m) => m.queue), missing.map((m) => m.count), this.config.claimMinIdleTimeMs],
    );
    if (rows.length > 0) this.logger.log(`republished ${rows.length} wake-up(s) for ${missing.length} queue(s)`);
    return rows.length;
  }

  /**
   * Queues with a run due and untaken for REPUBLISH_AFTER_MS or held by an idle claim, with how many
   * runs need a wake-up and how many wake-ups the outbox still holds for them. Outbox rows waiting
   * for a far-off time (an event wait's timeout, say) are not counted: they are not for now.
   */
  private queuesNeedingWakeups(): Promise<QueueNeed[]> {
    return this.db.query<QueueNeed>(
      `WITH due AS (
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
         LEFT JOIN LATERAL (${FLOW_CAP}) f ON true
        ORDER BY q.queue`,
      [this.config.republishAfterMs, this.config.claimMinIdleTimeMs],
    );
  }
}
