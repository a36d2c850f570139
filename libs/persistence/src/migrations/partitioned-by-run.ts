import type { QueryRunner } from 'typeorm';
import { withShortLockWaits } from './short-lock-waits';

/**
 * Makes `table` a table partitioned by range of `column` (the run id) without blocking its writes for more than a
 * few milliseconds: the table as it is becomes the partition `<table>_initial`, holding every run id below
 * `cutover` (a run id, the first of a week), and the weeks from `cutover` on are made as partitions of their own
 * (add_run_weeks(), which the partition manager calls from then on).
 *
 * 1. A CHECK that every row is below the cutover, added NOT VALID and then validated (a scan that lets writes go
 *    on): the attach then trusts it instead of scanning under its lock. The cutover is a week or two ahead, so no
 *    run id made meanwhile reaches it.
 * 2. In one transaction (short lock waits: an attempt that waits more than 100 ms is rolled back and made again),
 *    catalog work only: the table, its indexes and identity sequence renamed after the partition; a partitioned
 *    table made under the old name `LIKE` it (columns, defaults, identity, CHECKs), with the old primary key and
 *    indexes (built on nothing) and triggers (moved: a row trigger on the parent is cloned onto every partition,
 *    the ones attached later too; a statement trigger fires for statements that name the parent); the identity
 *    carried on from where the old sequence stood; the old table attached, its indexes adopted by the parent's
 *    without a build; the foreign keys into the table pointed at the parent, NOT VALID; the weeks made.
 * 3. Those foreign keys validated (again a scan that lets writes go on).
 *
 * Each step checks what is done already, so a start interrupted half-way finishes the work: a table already
 * partitioned is not converted again (its foreign keys still validated), a CHECK already added keeps its cutover
 * (cutoverOf).
 */
export async function partitionByRun(queryRunner: QueryRunner, table: string, column: string, cutover: string, weeksThrough: Date): Promise<void> {
  if (!(await isPartitioned(queryRunner, table))) await convert(queryRunner, table, column, cutover, weeksThrough);
  // Also after a start that stopped between the conversion's commit and these.
  for (const { name, from } of await unvalidatedForeignKeysInto(queryRunner, table)) {
    await queryRunner.query(`ALTER TABLE ${from} VALIDATE CONSTRAINT ${name}`);
  }
}

/** The conversion itself (see partitionByRun) of a table not partitioned yet. */
async function convert(queryRunner: QueryRunner, table: string, column: string, cutover: string, weeksThrough: Date): Promise<void> {
  const check = `${table}_before_weeks`;
  const initial = `${table}_initial`;
  if (!(await hasConstraint(queryRunner, table, check))) {
    await withShortLockWaits(queryRunner, `ALTER TABLE ${table} ADD CONSTRAINT ${check} CHECK (${column} < '${cutover}'::uuid) NOT VALID`);
  }
  await queryRunner.query(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${check}`);

  await withShortLockWaits(queryRunner, async () => {
    // Read before the rename (the definitions name the table); only a migration changes them, and migrations run one
    // at a time. The tables whose foreign keys point here are locked in the same statement. No order of the two
    // avoids every deadlock with the hot path: a completion reads its token and then locks the run, a keyed start
    // inserts the run and then its key. Either way the lock timeout ends the wait of this side, which rolls back and
    // tries again.
    const { primaryKey, indexes, triggers, identities, foreignKeys } = await definitionsOf(queryRunner, table);
    const locked = [...new Set(foreignKeys.map(({ from }) => from)), table];
    await queryRunner.query(`LOCK TABLE ${locked.join(', ')} IN ACCESS EXCLUSIVE MODE`);

    await queryRunner.query(`ALTER TABLE ${table} RENAME TO ${initial}`);
    for (const { name } of [primaryKey, ...indexes]) {
      await queryRunner.query(`ALTER INDEX ${name} RENAME TO ${initial}${name.slice(table.length)}`);
    }
    for (const { column: identity, sequence } of identities) {
      await queryRunner.query(`ALTER SEQUENCE ${sequence} RENAME TO ${initial}_${identity}_seq`);
    }

    await queryRunner.query(
      `CREATE TABLE ${table} (LIKE ${initial} INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)
         PARTITION BY RANGE (${column})`,
    );
    await queryRunner.query(`ALTER TABLE ${table} DROP CONSTRAINT ${check}`);
    await queryRunner.query(`ALTER TABLE ${table} ADD CONSTRAINT ${primaryKey.name} ${primaryKey.definition}`);
    for (const { definition } of indexes) await queryRunner.query(definition);
    for (const { name, definition } of triggers) {
      await queryRunner.query(`DROP TRIGGER ${name} ON ${initial}`);
      await queryRunner.query(definition);
    }
    for (const { column: identity } of identities) {
      // Under the table's lock no insert draws from the old sequence: where it stands is where the new one starts.
      await queryRunner.query(`SELECT setval(pg_get_serial_sequence('${table}', '${identity}'), last_value, is_called) FROM ${initial}_${identity}_seq`);
      await queryRunner.query(`ALTER TABLE ${initial} ALTER COLUMN "${identity}" DROP IDENTITY`);
    }

    await queryRunner.query(`ALTER TABLE ${table} ATTACH PARTITION ${initial} FOR VALUES FROM (MINVALUE) TO ('${cutover}')`);
    await queryRunner.query(`ALTER TABLE ${initial} DROP CONSTRAINT ${check}`);
    for (const { name, from, definition } of foreignKeys) {
      await queryRunner.query(`ALTER TABLE ${from} DROP CONSTRAINT ${name}, ADD CONSTRAINT ${name} ${definition} NOT VALID`);
    }
    await queryRunner.query(`SELECT add_run_weeks('${table}', $1)`, [weeksThrough.toISOString()]);
  });
}

/** Foreign keys of other tables into `table` added NOT VALID and not validated yet (as declared: not their copies per partition). */
async function unvalidatedForeignKeysInto(queryRunner: QueryRunner, table: string): Promise<{ name: string; from: string }[]> {
  return queryRunner.query(
    `SELECT conname AS name, conrelid::regclass::text AS from FROM pg_constraint
      WHERE confrelid = to_regclass($1) AND contype = 'f' AND conparentid = 0 AND NOT convalidated ORDER BY conname`,
    [table],
  );
}

/** The cutover of a conversion begun by an earlier start (its CHECK on one of `tables`), if any. */
export async function cutoverOf(queryRunner: QueryRunner, tables: readonly string[]): Promise<string | undefined> {
  const rows: { cutover: string }[] = await queryRunner.query(
    `SELECT substring(pg_get_constraintdef(oid) FROM '''([0-9a-f-]{36})''') AS cutover
       FROM pg_constraint WHERE conname = ANY($1::text[]) LIMIT 1`,
    [tables.map((table) => `${table}_before_weeks`)],
  );
  if (rows[0]) return rows[0].cutover;
  // Or the bound of an `_initial` partition attached already.
  const bounds: { cutover: string }[] = await queryRunner.query(
    `SELECT run_partition_end(c.oid) AS cutover FROM pg_class c WHERE c.relname = ANY($1::text[]) AND c.relispartition LIMIT 1`,
    [tables.map((table) => `${table}_initial`)],
  );
  return bounds[0]?.cutover;
}

interface Definitions {
  primaryKey: { name: string; definition: string };
  /** Indexes that back no constraint, as CREATE INDEX statements naming `table`. */
  indexes: { name: string; definition: string }[];
  /** Triggers, as CREATE TRIGGER statements naming `table`. */
  triggers: { name: string; definition: string }[];
  /** Identity columns and their sequences. */
  identities: { column: string; sequence: string }[];
  /** Foreign keys of other tables into `table`, as pg_get_constraintdef prints them (naming `table`). */
  foreignKeys: { name: string; from: string; definition: string }[];
}

/** What `table` has that a partitioned table made LIKE it does not, read before it is renamed (the definitions name it). */
async function definitionsOf(queryRunner: QueryRunner, table: string): Promise<Definitions> {
  const [primaryKey]: Definitions['primaryKey'][] = await queryRunner.query(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`,
    [table],
  );
  const indexes: Definitions['indexes'] = await queryRunner.query(
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
      ORDER BY c.relname`,
    [table],
  );
  const triggers: Definitions['triggers'] = await queryRunner.query(
    `SELECT tgname AS name, pg_get_triggerdef(oid) AS definition FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
    [table],
  );
  const identities: Definitions['identities'] = await queryRunner.query(
    `SELECT attname AS column, pg_get_serial_sequence($1, attname)::regclass::text AS sequence
       FROM pg_attribute WHERE attrelid = $1::regclass AND attidentity <> '' ORDER BY attnum`,
    [table],
  );
  const foreignKeys: Definitions['foreignKeys'] = await queryRunner.query(
    `SELECT conname AS name, conrelid::regclass::text AS from, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE confrelid = $1::regclass AND contype = 'f' ORDER BY conname`,
    [table],
  );
  // No rows only where recordMigrations records the statements without a database.
  return { primaryKey: primaryKey ?? { name: `${table}_pkey`, definition: '' }, indexes, triggers, identities, foreignKeys };
}

async function isPartitioned(queryRunner: QueryRunner, table: string): Promise<boolean> {
  const rows: unknown[] = await queryRunner.query(`SELECT 1 FROM pg_class WHERE oid = to_regclass($1) AND relkind = 'p'`, [table]);
  return rows.length > 0;
}

async function hasConstraint(queryRunner: QueryRunner, table: string, name: string): Promise<boolean> {
  const rows: unknown[] = await queryRunner.query(`SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass($1) AND conname = $2`, [table, name]);
  return rows.length > 0;
}
