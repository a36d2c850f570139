import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Pool, type PoolConfig, type QueryResultRow } from 'pg';

/**
 * A small pool of sessions that run prepared statements with their generic plan from the first
 * execution (`plan_cache_mode = force_generic_plan`), for statements whose planning costs more than
 * running them and whose inputs (arrays) no custom plan can use: the claim. PostgreSQL's own choice
 * kept re-planning it on every execution (~3 ms against ~1 ms to run it). The setting is the
 * session's, so it cannot live in the main pool, whose ORM statements do need custom plans; setting
 * it per transaction instead cost a BEGIN, a SET LOCAL and a COMMIT: three round trips a claim.
 */
export class GenericPlanPool implements OnApplicationShutdown {
  private readonly logger = new Logger(GenericPlanPool.name);
  private readonly pool: Pool;

  constructor(config: PoolConfig) {
    this.pool = new Pool({ ...config, options: `${config.options ?? ''} -c plan_cache_mode=force_generic_plan`.trim() });
    // An idle connection that dies is dropped and replaced on demand (as in the main pool).
    this.pool.on('error', (error) => this.logger.warn(`an idle PostgreSQL connection was lost (${error.message}); the pool opens a new one when needed`));
  }

  async query<T extends QueryResultRow>(config: { name?: string; text: string; values: unknown[] }): Promise<T[]> {
    return (await this.pool.query<T>(config)).rows;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
