import type { ClientBase } from 'pg';
import { queryConfig, type SqlExecutor } from './database';

/**
 * A dedicated session (a pg Client of its own, not a pooled one: a LISTEN or a session-level advisory lock
 * belongs to its session) as an executor of the SQL home's statements.
 */
export function sessionExecutor(client: Pick<ClientBase, 'query'>): SqlExecutor {
  return {
    async query<T>(statement: Parameters<SqlExecutor['query']>[0], values: unknown[] = []): Promise<T[]> {
      return (await client.query(queryConfig(statement, values))).rows as T[];
    },
  };
}
