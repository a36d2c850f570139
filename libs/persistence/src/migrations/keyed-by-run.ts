import type { QueryRunner } from 'typeorm';
import { withShortLockWaits } from './short-lock-waits';

/**
 * Moves `table`'s primary key from `id` to `(run_id, id)` without blocking writes, and drops `runIndex`, its index
 * on the run, which the new key serves. The key a table partitioned by run id needs (a partitioned table's unique
 * indexes must hold the partition key), and one index fewer for every insert.
 *
 * The unique index is built CONCURRENTLY (outside a transaction: the migration has `transaction = false`; the
 * migrations' lock is taken by polling so that no waiting coordinator holds the snapshot this build waits for,
 * migration-lock.sql.ts), then made the primary key in place (catalog work: both columns are NOT NULL, so nothing
 * is scanned; the old key's index goes with it), then the old index dropped CONCURRENTLY. Each step checks what
 * is done already, so an upgrade interrupted half-way is finished by the next start: an index left invalid by a
 * crash during its build is built again, a valid one is used.
 */
export async function keyByRun(queryRunner: QueryRunner, table: string, runIndex: string): Promise<void> {
  if (!(await primaryKeyIs(queryRunner, table, 'PRIMARY KEY (run_id, id)'))) {
    await swapPrimaryKey(queryRunner, table, `${table}_run_id_id_key`, '(run_id, id)');
  }
  await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS ${runIndex}`);
}

/** Undoes keyByRun: `runIndex` built again on `runIndexColumns`, and the key on `id` alone. */
export async function keyById(queryRunner: QueryRunner, table: string, runIndex: string, runIndexColumns: string): Promise<void> {
  await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS ${runIndex}`);
  await queryRunner.query(`CREATE INDEX CONCURRENTLY ${runIndex} ON ${table} ${runIndexColumns}`);
  if (!(await primaryKeyIs(queryRunner, table, 'PRIMARY KEY (id)'))) {
    await swapPrimaryKey(queryRunner, table, `${table}_id_key`, '(id)');
  }
}

/** Builds the unique index `index` on `columns` (again, if a crash left it invalid) and makes it the primary key. */
async function swapPrimaryKey(queryRunner: QueryRunner, table: string, index: string, columns: string): Promise<void> {
  if (!(await validIndex(queryRunner, index))) {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`);
    await queryRunner.query(`CREATE UNIQUE INDEX CONCURRENTLY ${index} ON ${table} ${columns}`);
  }
  await withShortLockWaits(queryRunner, `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY USING INDEX ${index}`);
}

/** Whether `table`'s primary key is `definition` (as pg_get_constraintdef prints it). */
async function primaryKeyIs(queryRunner: QueryRunner, table: string, definition: string): Promise<boolean> {
  const rows: { definition: string }[] = await queryRunner.query(
    `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`,
    [table],
  );
  return rows[0]?.definition === definition;
}

/** Whether the index `name` exists and is valid (a build CONCURRENTLY that failed leaves it invalid). */
async function validIndex(queryRunner: QueryRunner, name: string): Promise<boolean> {
  const rows: { valid: boolean }[] = await queryRunner.query(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)`, [name]);
  return rows[0]?.valid === true;
}
