import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

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
  constructor(private readonly dataSource: DataSource) {}

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  async query<T>(text: string, values: unknown[] = []): Promise<T[]> {
    const result = await this.pool.query(text, values);
    return result.rows as T[];
  }

  /** Runs `work` in one transaction on one connection; rolls back if it throws. */
  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
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
