import { LeaderElection, SingletonDaemon } from '@app/locking';
import { Database } from '@app/persistence';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';

const BATCH = 1_000;

/**
 * Redis contents are disposable; the database is the truth. Periodically puts back on their
 * queues the runs that are deliverable but have no outbox row in progress: due runs nobody took for
 * REPUBLISH_AFTER_MS (Redis lost them: FLUSHALL, failover, a restart without persistence) and runs
 * whose claim went stale (their worker died). A duplicate delivery is harmless: a worker takes a run
 * only at the revision its message carries. One coordinator runs it at a time.
 */
@Injectable()
export class RepublishDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'republish';
  private readonly logger = new Logger(RepublishDaemon.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /**
   * Runs this leader republished, and when: each gets at most one republish per REPUBLISH_AFTER_MS
   * (a saturated deployment would otherwise get its whole backlog re-sent every pass, growing the
   * streams exactly when workers are behind). A new leader starts empty: at most one extra round.
   */
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly election: LeaderElection,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.republish()
        .then(() => undefined, (error: Error) => this.logger.warn(`republish failed: ${error.message}`))
        .finally(() => (this.running = undefined));
    }, this.config.republishIntervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    this.recent.clear();
  }

  /**
   * Writes outbox rows for undelivered runs; returns how many. A run counts as covered only by an
   * outbox row that is being published or due now: a row waiting for a far-off time (an event wait's
   * timeout, say) says nothing about the run's current state.
   */
  async republish(): Promise<number> {
    const now = Date.now();
    for (const [runId, at] of this.recent) if (now - at >= this.config.republishAfterMs) this.recent.delete(runId);
    const rows = await this.db.query<{ run_id: string }>(
      `INSERT INTO outbox (run_id, queue, payload)
       SELECT r.id, r.queue, outbox_message(r) FROM runs r
        WHERE ((r.status IN ('queued', 'waiting') AND r.due_at <= now() - $1 * interval '1 millisecond')
               OR (r.status = 'running' AND r.heartbeat_at < now() - $2 * interval '1 millisecond'))
          AND NOT EXISTS (SELECT 1 FROM outbox o
                           WHERE o.run_id = r.id AND (o.status = 'in_flight' OR (o.status <> 'sent' AND o.next_attempt_at <= now())))
          AND r.id <> ALL($4::uuid[])
        LIMIT $3
       RETURNING run_id`,
      [this.config.republishAfterMs, this.config.claimMinIdleTimeMs, BATCH, [...this.recent.keys()]],
    );
    for (const row of rows) this.recent.set(row.run_id, now);
    if (rows.length > 0) this.logger.log(`republished ${rows.length} undelivered run(s)`);
    return rows.length;
  }
}
