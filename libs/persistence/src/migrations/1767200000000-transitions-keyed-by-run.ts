import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's transitions keyed by `(run_id, id)` instead of `id`: one index where there were two (the primary key on
 * `id`, and `run_transitions_run_idx (run_id, id)`). Nothing looks a transition up by id alone; the new key orders
 * a run's transitions as the history reads them (runs-list.sql.ts) and as retention's cascade deletes them. A run
 * writes three, so each start, claim and finish updates one index fewer (docs/benchmarks.md). It is also the key a
 * table partitioned by run id needs: a partitioned table's unique indexes must hold the partition key.
 *
 * Built without blocking writes: the unique index CONCURRENTLY (outside a transaction, hence `transaction =
 * false`; the migrations' lock is taken by polling so that no waiting coordinator holds the snapshot this build
 * waits for, migration-lock.sql.ts), then made the primary key in place (catalog work: both columns are NOT NULL,
 * so nothing is scanned; the old key's index goes with it), then the old index dropped CONCURRENTLY. Each step
 * checks what is done already, so an upgrade interrupted half-way is finished by the next start: an index left
 * invalid by a crash during its build is built again, a valid one is used.
 *
 * `run_events` has the same two indexes, but a coordinator older than 03a7869 consumes an event by its id alone,
 * which a key of `(run_id, id)` would turn into a scan: its re-keying waits for a release after that one.
 */
export class TransitionsKeyedByRun1767200000000 implements MigrationInterface {
  name = 'TransitionsKeyedByRun1767200000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    if (!(await keyedByRun(queryRunner))) {
      if (!(await validIndex(queryRunner, 'run_transitions_run_id_id_key'))) {
        await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS run_transitions_run_id_id_key`);
        await queryRunner.query(`CREATE UNIQUE INDEX CONCURRENTLY run_transitions_run_id_id_key ON run_transitions (run_id, id)`);
      }
      await queryRunner.query(
        `ALTER TABLE run_transitions DROP CONSTRAINT run_transitions_pkey,
           ADD CONSTRAINT run_transitions_pkey PRIMARY KEY USING INDEX run_transitions_run_id_id_key`,
      );
    }
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS run_transitions_run_idx`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS run_transitions_run_idx`);
    await queryRunner.query(`CREATE INDEX CONCURRENTLY run_transitions_run_idx ON run_transitions (run_id, id)`);
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS run_transitions_id_key`);
    await queryRunner.query(`CREATE UNIQUE INDEX CONCURRENTLY run_transitions_id_key ON run_transitions (id)`);
    await queryRunner.query(
      `ALTER TABLE run_transitions DROP CONSTRAINT run_transitions_pkey, ADD CONSTRAINT run_transitions_pkey PRIMARY KEY USING INDEX run_transitions_id_key`,
    );
  }
}

/** Whether the primary key of run_transitions is `(run_id, id)` already. */
async function keyedByRun(queryRunner: QueryRunner): Promise<boolean> {
  const rows: { definition: string }[] = await queryRunner.query(
    `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = 'run_transitions'::regclass AND contype = 'p'`,
  );
  return rows[0]?.definition === 'PRIMARY KEY (run_id, id)';
}

/** Whether the index `name` exists and is valid (a build CONCURRENTLY that failed leaves it invalid). */
async function validIndex(queryRunner: QueryRunner, name: string): Promise<boolean> {
  const rows: { valid: boolean }[] = await queryRunner.query(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)`, [name]);
  return rows[0]?.valid === true;
}
