import { LeaderElection, SingletonDaemon } from '@app/locking';
import { RUN_TABLES, retryOnLockTimeout } from '@app/persistence';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { RunWeeksMetrics } from './run-weeks.metrics';
import { RunWeeksRepository } from './run-weeks.repository';

const INTERVAL = 'run-weeks';
const HOUR_MS = 3_600_000;
/** How often the leader looks at the weeks: far more often than the margin below runs out. */
export const ROUND_INTERVAL_MS = HOUR_MS;
/** How far ahead of now the weeks are made: four weeks of margin for a leader that cannot make them. */
export const WEEKS_AHEAD_MS = 28 * 24 * HOUR_MS;
/** Attempts per table and round (each waits at most its lock timeout), and the pause between two. */
const LOCK_WAIT = { attempts: 10, pauseMs: 100 };

/**
 * The run tables' partition manager, on the coordinator that leads `run-weeks`: every ROUND_INTERVAL_MS (and on
 * taking the lead) it makes each run table's weeks until they reach WEEKS_AHEAD_MS from now. There is no default
 * partition (it would forbid the concurrent detach that a week's drop needs), so a run id past the last week made
 * cannot be inserted: the margin is what a cluster without a working leader has before starts fail
 * (`wf_run_weeks_ahead_seconds` shows it on every coordinator).
 *
 * It does not ANALYZE the partitioned tables, although autovacuum analyzes only their weeks: on PostgreSQL 15 an
 * ANALYZE of a partitioned table analyzes every partition too, and a week analyzed while empty is planned as empty
 * (a sequential scan in the generic plans) until autovacuum analyzes it again, after its first rows: plans that
 * scan the week whole as it fills, at the start of each week. A week never analyzed is taken for ten pages, and
 * probed by index (test/lock-plans.e2e-spec.ts).
 */
@Injectable()
export class RunWeeksDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'run-weeks';
  private readonly logger = new Logger(RunWeeksDaemon.name);
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly election: LeaderElection,
    private readonly repository: RunWeeksRepository,
    private readonly scheduler: SchedulerRegistry,
    private readonly metrics: RunWeeksMetrics,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    this.scheduler.addInterval(
      INTERVAL,
      setInterval(() => this.tick(), ROUND_INTERVAL_MS),
    );
    this.tick();
  }

  async stop(): Promise<void> {
    if (this.scheduler.doesExist('interval', INTERVAL)) this.scheduler.deleteInterval(INTERVAL);
    await this.idle();
  }

  /** Resolves once no round of the daemon's own is under way. */
  async idle(): Promise<void> {
    await this.running;
  }

  /** One round: each table's weeks made through WEEKS_AHEAD_MS from `now`; returns how many weeks it made. */
  async round(now = Date.now()): Promise<number> {
    let made = 0;
    for (const table of RUN_TABLES) made += await this.addWeeks(table, new Date(now + WEEKS_AHEAD_MS));
    return made;
  }

  private tick(): void {
    this.running ??= this.round()
      .then(
        (made) => {
          if (made > 0) this.logger.log(`made ${made} week partition(s) of the run tables`);
        },
        (error: Error) => {
          this.metrics.failures.inc();
          this.logger.warn(`the run tables' weeks could not be made (tried again in ${ROUND_INTERVAL_MS} ms): ${error.message}`);
        },
      )
      .finally(() => (this.running = undefined));
  }

  /** A table's weeks, tried again after a lock timeout (a VACUUM, an ANALYZE or another round holds the lock it needs). */
  private addWeeks(table: (typeof RUN_TABLES)[number], through: Date): Promise<number> {
    return retryOnLockTimeout(() => this.repository.addWeeks(table, through), LOCK_WAIT);
  }
}
