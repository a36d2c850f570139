import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Updates (issue 37; docs/architecture.md, "Updates"): requests a run answers.
 * - `run_updates`: each update sent to a run, `pending` until the run applies it where it waits (`completed` or
 *   `failed` with the handler's answer), or `refused` once the run ended without applying it. `position` is its
 *   arrival order: taken by the insert, which runs under the run's row lock, so positions follow the order the
 *   updates were accepted in. Deleted with its run (retention).
 * - `run_updates_pending_idx`: the pending updates of a run in arrival order, what a suspension probes (empty for
 *   almost every run: a partial index holds only pending rows).
 * - `workflows.updates`: the updates a version declares (name and input schema), as its workers last registered
 *   them; null: none. A nullable column without a default: adding it rewrites no row.
 * - Steps of kind `update`: an applied update in the run's history, at the position of the wait it was applied at.
 *   The check is added NOT VALID and validated apart, as the patch markers' was.
 */
export class Updates1766700000000 implements MigrationInterface {
  name = 'Updates1766700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE run_updates (
      id uuid PRIMARY KEY,
      run_id uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      position bigint GENERATED ALWAYS AS IDENTITY,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
      input jsonb,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed', 'refused')),
      output jsonb,
      error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      answered_at timestamptz
    )`);
    await queryRunner.query(`CREATE INDEX run_updates_run_idx ON run_updates (run_id)`);
    await queryRunner.query(`CREATE INDEX run_updates_pending_idx ON run_updates (run_id, position) WHERE status = 'pending'`);
    await queryRunner.query(`ALTER TABLE workflows ADD COLUMN updates jsonb`);
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external', 'update')) NOT VALID`,
    );
    await queryRunner.query(`ALTER TABLE tasks VALIDATE CONSTRAINT tasks_kind_check`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM tasks WHERE kind = 'update'`);
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external'))`,
    );
    await queryRunner.query(`ALTER TABLE workflows DROP COLUMN updates`);
    await queryRunner.query(`DROP TABLE run_updates`);
  }
}
