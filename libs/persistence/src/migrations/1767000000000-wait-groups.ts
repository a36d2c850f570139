import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steps of kind `group`: the recorded outcome of `ctx.any` / `ctx.all` (which branch won), so that every replay of
 * the run resolves the group the same way whatever the timing (docs/architecture.md, "Matched events and wait
 * groups"). A group's branches are steps of their own kinds (event, sleep, child, task) at the group's position,
 * keyed `<group key>/<index>`; an event wait's `match` is kept in its waiting step's output. Neither needs a column.
 *
 * As in 1766300000000-patch-markers, the wider check is added NOT VALID and validated apart, so the table is not
 * locked while its rows are checked.
 */
export class WaitGroups1767000000000 implements MigrationInterface {
  name = 'WaitGroups1767000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external', 'update', 'group')) NOT VALID`,
    );
    await queryRunner.query(`ALTER TABLE tasks VALIDATE CONSTRAINT tasks_kind_check`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM tasks WHERE kind = 'group'`);
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external', 'update'))`,
    );
  }
}
