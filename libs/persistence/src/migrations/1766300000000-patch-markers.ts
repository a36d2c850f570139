import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steps of kind `patch`: the marker `ctx.patched(id)` records where a run first reached a change under the new
 * code, so that its replays take the same branch (docs/architecture.md, "Changing a workflow safely"). A marker
 * is recorded with a task result's statement, completed at once, and read back with the run's other steps.
 *
 * The new check is added NOT VALID and validated apart: adding it validated would hold the table's exclusive
 * lock while it reads every step, and VALIDATE takes a lock that lets reads and writes of the steps go on.
 */
export class PatchMarkers1766300000000 implements MigrationInterface {
  name = 'PatchMarkers1766300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch')) NOT VALID`,
    );
    await queryRunner.query(`ALTER TABLE tasks VALIDATE CONSTRAINT tasks_kind_check`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM tasks WHERE kind = 'patch'`);
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(`ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry'))`);
  }
}
