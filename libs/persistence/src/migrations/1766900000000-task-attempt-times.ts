import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-attempt task times (issue 37, the dashboard's waterfall): `tasks.attempt_times`, on a task the attempts of
 * the execution that recorded it, as its worker timed them (`[{offsetMs, durationMs}]`, offsets from the task's
 * `started_at`), written once with its result; on a retry wait the attempts of the executions that ended in it,
 * dated (`[{attempt, startedAt, durationMs}]`), appended as it is re-armed. NULL when none were sent (older
 * workers, a task of one attempt) and for other steps. Nullable without a default, so adding it rewrites no
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
