import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { SCHEMA_MIGRATED } from './migration.runner';

/** Runs parameterised SQL and returns the rows: the pool, or one transaction's connection. */
export interface SqlExecutor {
  query<T>(text: string, values?: unknown[]): Promise<T[]>;
}

/**
 * Plain parameterised SQL on the pool TypeORM opened. The statements that matter for
 * correctness and speed (claim, revision-checked writes) go through here so each is one
 * visible round trip; the ORM serves everything else.
 */
@Injectable()
export class Database implements SqlExecutor {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(SCHEMA_MIGRATED) _schemaMigrated: true,
  ) {}

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  async query<T>(text: string, values: unknown[] = []): Promise<T[]> {
    return retryOnConflict(async () => (await this.pool.query(text, values)).rows as T[]);
  }

  /** Runs `work` in one transaction on one connection; rolls back if it throws (and retries it after a deadlock). */
  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return retryOnConflict(() => this.transactionOnce(work));
  }

  private async transactionOnce<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const tx: SqlExecutor = {
      query: async <R>(text: string, values: unknown[] = []) => (await client.query(text, values)).rows as R[],
    };
    try {
      await client.query('BEGIN');
      const result = await work(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

/** SQLSTATEs after which PostgreSQL rolled the whole statement or transaction back, so it can run again. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Runs `attempt` again (a few times) when PostgreSQL aborted it as a deadlock victim or a
 * serialization failure. Statements here are atomic (one statement, or one transaction), so nothing
 * of the aborted attempt remains. Lock orders differ between some statements (a child finishing
 * locks child then parent, a cancel locks parent then children), so rare deadlocks are expected.
 */
async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= 5 || !RETRYABLE.has((error as { code?: string }).code ?? '')) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * tries));
    }
  }
}
