import type { MigrationInterface, QueryRunner } from 'typeorm';
import { uuidv7Floor } from '../ids';
import { cutoverOf, partitionByRun } from './partitioned-by-run';
import { withShortLockWaits } from './short-lock-waits';

/** The tables partitioned, each by the column holding its run's id (RUN_TABLES, as they are at this migration). */
const PARTITION_KEYS = { runs: 'id', tasks: 'run_id', run_transitions: 'run_id', run_events: 'run_id', run_updates: 'run_id', run_values: 'run_id' };

const WEEK_MS = 7 * 86_400_000;
/** How far ahead of now the conversion makes weeks (the partition manager keeps as many made: RunWeeksDaemon). */
const WEEKS_AHEAD_MS = 4 * WEEK_MS;

/**
 * The first run id of the week after next (weeks start on Mondays, 00:00 UTC): the conversion's cutover, far enough
 * ahead that no run id reaches it before the conversion ends.
 */
export function cutoverAfter(now: number): string {
  // 1970-01-01 was a Thursday: Mondays are 4 days into the epoch's weeks.
  const monday = Math.floor((now - 4 * 86_400_000) / WEEK_MS) * WEEK_MS + 4 * 86_400_000;
  return uuidv7Floor(monday + 2 * WEEK_MS);
}

/**
 * `runs` and the tables keyed by its id (RUN_TABLES) partitioned by run id, a partition a week: so that retention
 * can drop a week's rows whole (detached and dropped in a third of a second for 300,000 runs, W2's p99 unmoved:
 * docs/benchmarks.md, "A week dropped beside W2") where it now deletes them row by row, at a cost in proportion to
 * what it deletes that moves W2's p99 about 2× even when paced to W1's rate. Run ids are UUIDv7, so a week of run
 * ids is a week of creation: the bounds are the weeks' first ids (run_id_floor).
 *
 * Each table as it is becomes the partition `<table>_initial` of every run id before the cutover (the Monday after
 * next: cutoverAfter), converted without blocking writes but for a few milliseconds (partitioned-by-run.ts); the
 * weeks from the cutover on are made four weeks ahead, by add_run_weeks(), which the partition manager on the leader
 * calls from then on. There is no default partition (it would forbid the detach CONCURRENTLY that retention needs):
 * a run id past the last week made cannot be inserted, which is why weeks are made weeks ahead.
 *
 * A new database goes the same way on empty tables, so every database ends with one schema. Outside a transaction:
 * the CHECKs and foreign keys are validated while writes go on.
 */
export class RunTablesPartitionedByWeek1767600000000 implements MigrationInterface {
  name = 'RunTablesPartitionedByWeek1767600000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_id_floor(at timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
        SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7000-8000-000000000000')::uuid
          FROM lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') AS h
      $$`);
    // A partition's upper bound (a run id; null for MAXVALUE), and where the last of a table's partitions ends: the
    // time of its bound, whose first 48 bits are Unix milliseconds.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_partition_end(partition regclass) RETURNS uuid LANGUAGE sql STABLE AS $$
        SELECT substring(pg_get_expr(relpartbound, oid) FROM 'TO \\(''([0-9a-f-]{36})''\\)')::uuid FROM pg_class WHERE oid = partition
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_weeks_end(parent regclass) RETURNS timestamptz LANGUAGE sql STABLE AS $$
        SELECT to_timestamp(('x' || substr(replace(bound::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
          FROM (SELECT run_partition_end(inhrelid) AS bound FROM pg_inherits WHERE inhparent = parent) b
         ORDER BY bound DESC NULLS LAST LIMIT 1
      $$`);
    // One table per call, all its weeks in one transaction: the caller sets its lock timeout. The table's SHARE UPDATE
    // EXCLUSIVE lock first, which each attach takes anyway and no statement of the engine's waits for: a second caller
    // making the same weeks (a coordinator taking the lead as another lets go) waits, then finds them made. Each week
    // is made as a table and then attached: CREATE TABLE … PARTITION OF would lock the parent ACCESS EXCLUSIVE. The
    // attach's bound check has nothing to scan.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION add_run_weeks(parent regclass, through timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
      DECLARE
        week timestamptz;
        made integer := 0;
        name text;
      BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE', parent);
        week := run_weeks_end(parent);
        IF week IS NULL THEN
          RAISE EXCEPTION '% has no partition with an upper bound to add weeks after', parent;
        END IF;
        WHILE week <= through LOOP
          name := format('%s_w%s', (SELECT relname FROM pg_class WHERE oid = parent), to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'));
          EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)',
                         name, parent);
          EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                         parent, name, run_id_floor(week), run_id_floor(week + interval '168 hours'));
          made := made + 1;
          week := week + interval '168 hours';
        END LOOP;
        RETURN made;
      END;
      $$`);
    const cutover = (await cutoverOf(queryRunner, Object.keys(PARTITION_KEYS))) ?? cutoverAfter(Date.now());
    const weeksThrough = new Date(Date.now() + WEEKS_AHEAD_MS);
    try {
      for (const [table, column] of Object.entries(PARTITION_KEYS)) {
        await partitionByRun(queryRunner, table, column, cutover, weeksThrough);
      }
    } catch (error) {
      await withoutCutoverChecks(queryRunner, Object.keys(PARTITION_KEYS));
      throw error;
    }
  }

  async down(): Promise<void> {
    throw new Error('RunTablesPartitionedByWeek1767600000000 cannot be undone: restore the database from a backup taken before it');
  }
}

/**
 * After a conversion that failed (its lock waits ran out, a statement failed) before any table was converted, the
 * cutover CHECKs go: a CHECK refuses the run ids past the cutover from the day it comes, a week or two later, and
 * the coordinators still running may be the older release if the upgrade is given up; the next start chooses a
 * cutover again. Once a table is converted the cutover is fixed, and the CHECKs stay: without one, a table not
 * converted yet would take run ids past the cutover once it comes (the converted `runs` has their weeks), and the
 * next start could then not validate it again. Best effort: a connection that died leaves them to the next start.
 */
async function withoutCutoverChecks(queryRunner: QueryRunner, tables: string[]): Promise<void> {
  try {
    const [partitioned]: unknown[] = await queryRunner.query(`SELECT 1 FROM pg_class WHERE oid = ANY($1::regclass[]) AND relkind = 'p'`, [tables]);
    if (partitioned) return;
    const checked: { table: string; name: string }[] = await queryRunner.query(
      `SELECT conrelid::regclass::text AS table, conname AS name FROM pg_constraint WHERE conname = ANY($1::text[])`,
      [tables.map((table) => `${table}_before_weeks`)],
    );
    for (const { table, name } of checked) await withShortLockWaits(queryRunner, `ALTER TABLE ${table} DROP CONSTRAINT ${name}`);
  } catch {
    // Left to the next start, which converts these tables.
  }
}
