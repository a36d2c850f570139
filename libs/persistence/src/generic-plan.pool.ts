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
 * rows kept in memory by primary key; 1.1, the usual setting for SSDs and cached data, prices those probes as such,
 * and the plans probe at any size (test/lock-plans.e2e-spec.ts). The main pool keeps the server's setting (a lone
 * finish runs there, in `auto` mode, whose generic plan is made at a session's sixth execution). A tablespace's own
 * random_page_cost overrides this one.
 */
export const GENERIC_PLAN_SESSION_OPTIONS = '-c plan_cache_mode=force_generic_plan -c random_page_cost=1.1';

/**
 * A small pool of sessions that run prepared statements with their generic plan from the first
 * execution (`plan_cache_mode = force_generic_plan`), for statements whose planning costs more than
 * running them and whose inputs (arrays) no custom plan can use: the claim, the start, a task result, and
 * a worker's report batch as a transaction. PostgreSQL's own choice kept re-planning them on every execution
 * (the claim: ~3 ms against ~1 ms to run it; a task result: 0.31 ms against 0.13). The setting is the
 * session's, so it cannot live in the main pool, whose ORM statements do need custom plans; setting
 * it per transaction instead cost a BEGIN, a SET LOCAL and a COMMIT: three round trips a claim.
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
