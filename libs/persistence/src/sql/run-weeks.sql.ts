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
 * how many it made. One transaction: the attaches take SHARE UPDATE EXCLUSIVE on the table, which no statement of
 * the engine's takes, only an ANALYZE, a VACUUM or another attach: two coordinators making the same week wait for
 * each other, and the second finds it made. The lock timeout keeps a wait behind such a one short; the caller
 * tries again.
 */
export async function addRunWeeks(tx: SqlExecutor, table: (typeof RUN_TABLES)[number], through: Date): Promise<number> {
  await tx.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
  const [row] = await tx.query<{ made: number }>(`SELECT add_run_weeks($1::regclass, $2) AS made`, [table, through]);
  return row.made;
}

/**
 * Where the weeks made end, the earliest over RUN_TABLES: run ids from then on cannot be inserted. Read from the
 * partitions' bounds (each week's upper bound is the first run id of the next, whose first 48 bits are Unix ms).
 */
export async function runWeeksEnd(db: SqlExecutor): Promise<Date> {
  const [row] = await db.query<{ end: Date }>(
    `SELECT min(last_bound) AS end FROM (
       SELECT to_timestamp(('x' || substr(replace(max(bound), '-', ''), 1, 12))::bit(48)::bigint / 1000.0) AS last_bound
         FROM (SELECT i.inhparent, substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([0-9a-f-]{36})''\\)') AS bound
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = ANY($1::regclass[])) b
        GROUP BY inhparent) t`,
    [RUN_TABLES],
  );
  return row.end;
}
