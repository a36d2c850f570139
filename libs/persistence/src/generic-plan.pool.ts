import type { OnApplicationShutdown } from '@nestjs/common';
import { Pool, type PoolClient, type PoolConfig, type QueryResultRow } from 'pg';
import type { PooledClient } from './pooled-client';

/**
 * The sessions' settings. A plan is kept from a session's first execution until the next ANALYZE of its tables, so
 * it must suit them at any size. On a new database PostgreSQL takes a never-analyzed table for ten pages, and at
 * the default random_page_cost (4: a disk seek per page read at random) a join that reads all ten costs less than
 * a few primary-key probes; the plan made then kept scanning `runs` whole for the first minute of autovacuum, while
 * the table grew (the task result's claim refresh, and in report batches the finish's parent wake-up:
 * docs/benchmarks.md, "Fixed in the next session"). These sessions only run the hot path's statements, which find
 * rows kept in memory by primary key; 1.1, the usual setting for SSDs and cached data, prices those probes as such.
 *
 * With the run tables partitioned by week that was not enough: the claim refresh joined four never-analyzed weeks
 * of ten pages by sequential scans again, and a week analyzed while still empty (a manual ANALYZE reaches the weeks
 * made ahead) is planned as empty until autovacuum analyzes it after its first rows, when plans made meanwhile
 * would scan it whole as it fills. So sequential scans are off (`enable_seqscan`: priced out, not forbidden, where
 * nothing else can read a table) and the plans probe by index whatever the statistics say
 * (test/lock-plans.e2e-spec.ts). PostgreSQL 15 prices a disabled scan by adding 10^10 to its cost, which every
 * cost threshold then sees: a statement that must still scan a table (the feed's check of `feed_watchers`, in the
 * history's trigger) was compiled by JIT at every execution, 20–90 ms each, so JIT is off here, and parallel plans
 * with it (none of these statements reads more than a few rows). The main pool keeps the server's settings. A
 * tablespace's own random_page_cost overrides this one.
 */
export const GENERIC_PLAN_SESSION_OPTIONS =
  '-c plan_cache_mode=force_generic_plan -c random_page_cost=1.1 -c enable_seqscan=off -c jit=off -c max_parallel_workers_per_gather=0';

/**
 * A small pool of sessions that run prepared statements with their generic plan from the first
 * execution (`plan_cache_mode = force_generic_plan`), for statements whose planning costs more than
 * running them and whose inputs (arrays) no custom plan can use: the claim, the start, a task result, a
 * finish, the read of a run by id, and a worker's report batch as a transaction. PostgreSQL's own choice kept
 * re-planning them on every execution (the claim: ~3 ms against ~1 ms to run it; a task result: 0.31 ms
 * against 0.13), and against the run tables' weekly partitions a custom plan plans for every week, where a
 * generic one prunes them at execution. The setting is the session's, so it cannot live in the main pool,
 * whose ORM statements do need custom plans; setting it per transaction instead cost a BEGIN, a SET LOCAL and
 * a COMMIT: three round trips a claim.
 */
export class GenericPlanPool implements OnApplicationShutdown {
  private readonly pool: Pool;

  /**
   * `config.Client`: the sessions' class, a PooledClient (PrimaryLocator's, which connects to the primary).
   * `idleConnectionLost`: an idle session died (the pool drops it and opens a new one on demand).
   */
  constructor(config: PoolConfig & { Client: typeof PooledClient }, idleConnectionLost: (error: Error) => void) {
    this.pool = new Pool({ ...config, options: `${config.options ?? ''} ${GENERIC_PLAN_SESSION_OPTIONS}`.trim() });
    this.pool.on('error', idleConnectionLost);
  }

  async query<T extends QueryResultRow>(config: { name?: string; text: string; values: unknown[] }): Promise<T[]> {
    return (await this.pool.query<T>(config)).rows;
  }

  /** A session of its own, for a transaction of such statements (Database.transaction with `genericPlan`). */
  connect(): Promise<PoolClient> {
    return this.pool.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
