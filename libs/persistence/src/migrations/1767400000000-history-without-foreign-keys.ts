import type { MigrationInterface, QueryRunner } from 'typeorm';
import { withShortLockWaits } from './short-lock-waits';

/** The foreign keys between `runs` and the tables partitioned with it (docs/benchmarks.md, "A week dropped beside W2"). */
const FOREIGN_KEYS = [
  { table: 'tasks', name: 'tasks_run_id_fkey', definition: 'FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE' },
  { table: 'run_transitions', name: 'run_transitions_run_id_fkey', definition: 'FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE' },
  { table: 'run_events', name: 'run_events_run_id_fkey', definition: 'FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE' },
  { table: 'run_updates', name: 'run_updates_run_id_fkey', definition: 'FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE' },
  { table: 'run_values', name: 'run_values_run_id_fkey', definition: 'FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE' },
  { table: 'runs', name: 'runs_parent_id_fkey', definition: 'FOREIGN KEY (parent_id) REFERENCES runs(id) ON DELETE SET NULL' },
];

/**
 * A run's steps, transitions, events, updates and values without foreign keys to `runs`, and `runs.parent_id`
 * without one to its parent: the tables that will be partitioned by run id together, whose weeks retention will
 * drop together. Between partitioned tables these keys are what a week's drop costs the hot path: detaching the
 * referenced week of `runs` kept failing its lock wait, each attempt queueing the hot statements (W2's start p99
 * 5–7 ms → 15–68 ms); without them a week of 300,000 runs went in a third of a second and the p99 did not move
 * (docs/benchmarks.md). `idempotency_keys` and `completion_tokens` keep theirs: they stay unpartitioned.
 *
 * What the keys did moves to delete_runs(), the one path that deletes runs (runs_delete_guard): it deletes the
 * runs' rows in those tables and clears their children's `parent_id`, as ON DELETE CASCADE and SET NULL did. What
 * they guarded, no such row without its run, rests on the run's row lock: every write that adds one holds it and
 * needs the run unfinished, and a run finishes under the same lock, so once a run is seen finished (delete_runs()
 * deletes finished runs only) all its rows are committed, and none comes after.
 *
 * run_transitions' guard lets delete_runs() delete there at any trigger depth (it did only from the cascade); a
 * statement trigger after the delete keeps the rule the cascade kept, history only with its run: it refuses a
 * delete of transitions whose run still exists (one primary-key probe per run), whatever the setting.
 *
 * Outside a transaction: each key is dropped with short lock waits (short-lock-waits.ts). The guard is replaced
 * before delete_runs() (the new function deletes transitions itself, which the old guard refused), and both before
 * the keys go, so no run is deleted without its rows at any step; a second run of up() changes nothing.
 */
export class HistoryWithoutForeignKeys1767400000000 implements MigrationInterface {
  name = 'HistoryWithoutForeignKeys1767400000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    // The guard first: the new delete_runs() deletes transitions itself, which the old guard refused.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'run_transitions is append-only'
          USING HINT = 'history is removed only with its run, through delete_runs()';
      END;
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_transitions_only_with_their_run() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id FROM removed) d JOIN runs r ON r.id = d.run_id) THEN
          RAISE EXCEPTION 'run_transitions is append-only'
            USING HINT = 'history is removed only with its run, through delete_runs()';
        END IF;
        RETURN NULL;
      END;
      $$`);
    await withShortLockWaits(
      queryRunner,
      `CREATE OR REPLACE TRIGGER run_transitions_only_with_their_run AFTER DELETE ON run_transitions
         REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION run_transitions_only_with_their_run()`,
    );
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION delete_runs(ids uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
      DECLARE
        deleted uuid[];
      BEGIN
        PERFORM set_config('wf.deleting_runs', 'on', true);
        WITH gone AS (
          DELETE FROM runs WHERE id = ANY(ids) AND status IN ('completed', 'failed', 'cancelled') RETURNING id
        )
        SELECT coalesce(array_agg(id), '{}') INTO deleted FROM gone;
        DELETE FROM tasks WHERE run_id = ANY(deleted);
        DELETE FROM run_transitions WHERE run_id = ANY(deleted);
        DELETE FROM run_events WHERE run_id = ANY(deleted);
        DELETE FROM run_updates WHERE run_id = ANY(deleted);
        DELETE FROM run_values WHERE run_id = ANY(deleted);
        UPDATE runs SET parent_id = NULL WHERE parent_id = ANY(deleted);
        PERFORM set_config('wf.deleting_runs', 'off', true);
        RETURN QUERY SELECT unnest(deleted);
      END;
      $$`);
    for (const key of FOREIGN_KEYS) {
      await withShortLockWaits(queryRunner, `ALTER TABLE ${key.table} DROP CONSTRAINT IF EXISTS ${key.name}`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const key of FOREIGN_KEYS) {
      const [found] = await queryRunner.query(`SELECT 1 FROM pg_constraint WHERE conname = $1 AND conrelid = $2::regclass`, [key.name, key.table]);
      if (!found) await withShortLockWaits(queryRunner, `ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition} NOT VALID`);
      await queryRunner.query(`ALTER TABLE ${key.table} VALIDATE CONSTRAINT ${key.name}`);
    }
    // delete_runs() first: until it is back to the cascade, the old guard would refuse its deletes.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION delete_runs(ids uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM set_config('wf.deleting_runs', 'on', true);
        RETURN QUERY
          WITH deleted AS (
            DELETE FROM runs WHERE id = ANY(ids) AND status IN ('completed', 'failed', 'cancelled') RETURNING id
          )
          SELECT id FROM deleted;
        PERFORM set_config('wf.deleting_runs', 'off', true);
      END;
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 AND current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'run_transitions is append-only'
          USING HINT = 'history is removed only with its run, through delete_runs()';
      END;
      $$`);
    await withShortLockWaits(queryRunner, `DROP TRIGGER IF EXISTS run_transitions_only_with_their_run ON run_transitions`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS run_transitions_only_with_their_run()`);
  }
}
