import type { SqlExecutor } from '../database';
import { RUN_TABLES } from '../run-tables';

/*
 * The run tables' weekly partitions (1767600000000-run-tables-partitioned-by-week): made ahead of the run ids that
 * will fill them, since a run id past the last week made cannot be inserted (there is no default partition).
 */

/** How long one attempt to attach a week may wait for its lock on the table (SHARE UPDATE EXCLUSIVE). */
const LOCK_TIMEOUT_MS = 100;

/**
 * Makes `table`'s weeks (each a table attached as a partition, add_run_weeks()) until one covers `through`; returns
 * how many it made. One transaction, holding the table's SHARE UPDATE EXCLUSIVE lock, which no statement of the
 * engine's takes, only a VACUUM, an ANALYZE or another caller: a second coordinator making the same weeks waits,
 * then finds them made. The lock timeout keeps a wait behind such a one short; the caller tries again.
 */
export async function addRunWeeks(tx: SqlExecutor, table: (typeof RUN_TABLES)[number], through: Date): Promise<number> {
  await tx.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
  const [row] = await tx.query<{ made: number }>(`SELECT add_run_weeks($1::regclass, $2) AS made`, [table, through]);
  return row.made;
}

/** Where the weeks made end, the earliest over RUN_TABLES (run_weeks_end()): run ids from then on cannot be inserted. */
export async function runWeeksEnd(db: SqlExecutor): Promise<Date> {
  const [row] = await db.query<{ end: Date }>(`SELECT min(run_weeks_end(t)) AS end FROM unnest($1::regclass[]) AS t`, [RUN_TABLES]);
  return row.end;
}
