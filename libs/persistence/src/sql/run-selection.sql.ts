import type { RunStatus } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { RUN_FILTER, type RunFilterValues, runFilterValues } from './runs-list.sql';

/*
 * The runs a bulk cancel or retry acts on: those the runs list's filter matches (RUN_FILTER, planned as the list's
 * own query is) and whose status the action applies to ($9). Read on a snapshot without locks: each run is then
 * changed by the command a single cancel or retry runs (run-commands.sql.ts), which locks it and judges its
 * status again, so a run changed meanwhile is skipped, never changed twice or out of turn.
 */

const MATCHING_RUN_IDS = `SELECT id FROM runs WHERE ${RUN_FILTER} AND status = ANY ($9::text[]) ORDER BY id DESC LIMIT $1`;

/** The ids of up to `limit` matching runs in one of `statuses`, newest first (below `cursor`, when given). */
export async function matchingRunIds(db: SqlExecutor, filter: RunFilterValues, statuses: RunStatus[], limit: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(MATCHING_RUN_IDS, [limit, ...runFilterValues(filter), statuses]);
  return rows.map((row) => row.id);
}

/** Counted through a LIMIT, so a count stops at $1 rows however many match (a filter that matches millions). */
const COUNT_MATCHING_RUNS = `SELECT count(*)::int AS count FROM (SELECT 1 FROM runs WHERE ${RUN_FILTER} AND status = ANY ($9::text[]) LIMIT $1) matching`;

/** How many runs match in one of `statuses`, counting up to `max`. */
export async function countMatchingRuns(db: SqlExecutor, filter: RunFilterValues, statuses: RunStatus[], max: number): Promise<number> {
  const [{ count }] = await db.query<{ count: number }>(COUNT_MATCHING_RUNS, [max, ...runFilterValues(filter), statuses]);
  return count;
}
