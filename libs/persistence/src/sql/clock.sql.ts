import type { SqlExecutor } from '../database';

const DATABASE_NOW = `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`;

/**
 * The database clock at this statement (clock_timestamp(), not the transaction's start), epoch ms with a
 * fraction: due times and schedules' fire times are in it, whatever the coordinators' clocks say. Reads nothing.
 */
export async function databaseNow(db: SqlExecutor): Promise<number> {
  const [row] = await db.query<{ now: number }>(DATABASE_NOW);
  return row.now;
}
