import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { asDatabaseError } from './connection-loss';
import { GenericPlanPool } from './generic-plan.pool';
import { SCHEMA_MIGRATED } from './migration.runner';

/**
 * A statement run often enough to keep prepared: each connection parses and plans it once (a claim's
 * planning costs more than its execution), then reuses the plan. `name` must be unique per text.
 */
export interface PreparedStatement {
  name: string;
  text: string;
  /**
   * Run outside a transaction on the GenericPlanPool's sessions, planned once with its generic plan (see
   * there): for a statement whose planning costs more than running it. In a transaction it is planned
   * as that session decides.
   */
  genericPlan?: boolean;
}

export function prepared(name: string, text: string, options: { genericPlan?: boolean } = {}): PreparedStatement {
  return { name, text, ...options };
}

/** Runs parameterised SQL and returns the rows: the pool, or one transaction's connection. */
export interface SqlExecutor {
  query<T>(statement: string | PreparedStatement, values?: unknown[]): Promise<T[]>;
}

/** node-postgres' form of a statement: named ones are prepared once per connection. */
export function queryConfig(statement: string | PreparedStatement, values: unknown[]) {
  return typeof statement === 'string' ? { text: statement, values } : { name: statement.name, text: statement.text, values };
}

/**
 * Plain parameterised SQL on the pool TypeORM opened. The statements that matter for
 * correctness and speed (claim, revision-checked writes) go through here so each is one
 * visible round trip; the ORM serves everything else.
 *
 * A connection that dies (database restarted, backend terminated, network cut) fails only the
 * statement or transaction it carried, with DatabaseUnavailableError (503). Nothing is retried on
 * another connection: a statement whose answer was lost may have committed, and only the caller
 * knows whether running it again is safe (worker writes are revision-fenced; workers retry them).
 */
@Injectable()
export class Database implements SqlExecutor {
  private readonly logger = new Logger(Database.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly genericPlans: GenericPlanPool,
    @Inject(SCHEMA_MIGRATED) _schemaMigrated: true,
  ) {}

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  async query<T>(statement: string | PreparedStatement, values: unknown[] = []): Promise<T[]> {
    // pool.query listens for its client's 'error' while the statement runs, and discards that client.
    const run =
      typeof statement !== 'string' && statement.genericPlan
        ? () => this.genericPlans.query(queryConfig(statement, values)) as Promise<T[]>
        : async () => (await this.pool.query(queryConfig(statement, values))).rows as T[];
    return retryOnConflict(run).catch((error: unknown) => {
      throw asDatabaseError(error);
    });
  }

  /**
   * Runs `work` in one transaction on one connection; rolls back if it throws (and retries it
   * after a deadlock). Its statements run one after another on that connection, in the order
   * they were issued, even if `work` issues several at once. With `genericPlan` the connection is one of
   * the GenericPlanPool's, so every statement of `work` runs with its generic plan: for a transaction of
   * prepared statements whose planning costs more than running them (a worker's report batch).
   */
  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>, options: { genericPlan?: boolean } = {}): Promise<T> {
    const connect = options.genericPlan ? () => this.genericPlans.connect() : () => this.pool.connect();
    return retryOnConflict(() => this.transactionOnce(connect, work)).catch((error: unknown) => {
      throw asDatabaseError(error);
    });
  }

  private async transactionOnce<T>(connect: () => Promise<PoolClient>, work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await connect();
    let broken: Error | undefined;
    // A checked-out client reports the death of its connection as an 'error' event, even while a
    // statement is running (which fails too): heard here, the client goes back to the pool as broken.
    // (PooledClient keeps the event from ending the process before this listener is added.)
    const onError = (error: Error) => {
      if (!broken) this.logger.warn(`a PostgreSQL connection died during a transaction (${error.message}); that transaction fails`);
      broken = error;
    };
    client.on('error', onError);
    const tx = new TransactionStatements(client);
    try {
      await tx.query('BEGIN');
      const result = await work(tx);
      await tx.query('COMMIT');
      return result;
    } catch (error) {
      // A client whose ROLLBACK fails is in an unknown state: it must not go back to the pool.
      if (!broken) await tx.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      tx.end();
      client.off('error', onError);
      // Released with an error, the pool closes the client instead of handing it out again.
      client.release(broken);
    }
  }
}

/**
 * One transaction's statements on its client, strictly one after another: each is sent only once
 * the previous one has answered (node-postgres deprecates queueing on a client, and pg 9 refuses
 * it), and none after the transaction ended.
 */
class TransactionStatements implements SqlExecutor {
  private last: Promise<unknown> = Promise.resolve();
  private ended = false;

  constructor(private readonly client: PoolClient) {}

  query<T>(statement: string | PreparedStatement, values: unknown[] = []): Promise<T[]> {
    if (this.ended) return Promise.reject(new Error('a statement was issued after its transaction ended'));
    const result = this.last.then(async () => {
      if (this.ended) throw new Error('a statement was issued after its transaction ended');
      return (await this.client.query(queryConfig(statement, values))).rows as T[];
    });
    this.last = result.catch(() => undefined);
    return result;
  }

  end(): void {
    this.ended = true;
  }
}

/** SQLSTATEs after which PostgreSQL rolled the whole statement or transaction back, so it can run again. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Runs `attempt` again (a few times) when PostgreSQL aborted it as a deadlock victim or a
 * serialization failure. Statements here are atomic (one statement, or one transaction), so nothing
 * of the aborted attempt remains. Rows are locked in id order (see docs/architecture.md), but a
 * child finishing locks child then parent while a cancel locks parent then children, so rare
 * deadlocks remain possible there.
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
