import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-attempt task times (issue 37, the dashboard's waterfall): `tasks.attempt_times`, the attempts of the
 * execution that recorded a task, as its worker timed them (`[{offsetMs, durationMs}]`, offsets from the task's
 * `started_at`). Written once, with the task's result, by the statements that insert it; NULL from workers that
 * send none (older ones) and for steps that are not tasks. Nullable without a default, so adding it rewrites no
 * row (a catalog change only); no index reads it.
 */
export class TaskAttemptTimes1766900000000 implements MigrationInterface {
  name = 'TaskAttemptTimes1766900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks ADD COLUMN attempt_times jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks DROP COLUMN attempt_times`);
  }
}
