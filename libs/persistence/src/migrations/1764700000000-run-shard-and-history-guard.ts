import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 1. A run's routing shard as its own column, so a child run can inherit its parent's (the queue
 *    name `<workflow>:<version>[:<shard>]` stays what claims and publishers address; it is built
 *    from the shard by queueName() whenever a run is inserted).
 * 2. The history is append-only for DELETE as well as UPDATE. Runs (and with them, by cascade,
 *    their history, steps and events) are deleted only through delete_runs(), which allows it for
 *    its own statement through a transaction-local setting: the one sanctioned path for retention.
 *    This guards against mistakes, not against a database owner, who can drop the triggers.
 *    TRUNCATE fires no DELETE trigger and stays possible (tests empty their tables with it).
 */
export class RunShardAndHistoryGuard1764700000000 implements MigrationInterface {
  name = 'RunShardAndHistoryGuard1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN shard text`);
    // Runs started before this column: their shard is the queue name's third part (identifiers cannot contain ':').
    await queryRunner.query(`UPDATE runs SET shard = split_part(queue, ':', 3) WHERE split_part(queue, ':', 3) <> ''`);

    // History rows go only with their run: a DELETE cascading from runs (trigger depth > 1) while
    // delete_runs() runs. A direct DELETE is refused even with the setting on.
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
    await queryRunner.query(`DROP TRIGGER run_transitions_no_update ON run_transitions`);
    await queryRunner.query(`
      CREATE TRIGGER run_transitions_append_only BEFORE UPDATE OR DELETE ON run_transitions
        FOR EACH STATEMENT EXECUTE FUNCTION run_transitions_append_only()`);

    await queryRunner.query(`
      CREATE FUNCTION runs_delete_guard() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'runs are deleted only through delete_runs()'
          USING HINT = 'SELECT delete_runs(ARRAY[...]::uuid[]) deletes finished runs with their history';
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER runs_delete_guard BEFORE DELETE ON runs
        FOR EACH STATEMENT EXECUTE FUNCTION runs_delete_guard()`);

    // Finished runs only: deleting a run a worker holds or a claimer may take would leave them
    // writing to nothing. Returns the ids it deleted. The setting is switched off again before
    // returning, so the rest of the caller's transaction is guarded as before.
    await queryRunner.query(`
      CREATE FUNCTION delete_runs(ids uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
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
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION delete_runs(uuid[])`);
    await queryRunner.query(`DROP TRIGGER runs_delete_guard ON runs`);
    await queryRunner.query(`DROP FUNCTION runs_delete_guard()`);
    await queryRunner.query(`DROP TRIGGER run_transitions_append_only ON run_transitions`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION run_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'run_transitions is append-only';
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER run_transitions_no_update BEFORE UPDATE ON run_transitions
        FOR EACH STATEMENT EXECUTE FUNCTION run_transitions_append_only()`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN shard`);
  }
}
