import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Build ids (issue 34): which build of a worker's code ran a run.
 * - `runs.build_id`: the build id of the worker that took the run last, set by the statements that make a run
 *   running for a worker (the claim's two forms, which takes use too, and the hand-off starts), from the build id
 *   the worker sends with its claim, take or offer. NULL until a worker takes the run, or when its worker did not
 *   say (an older worker). No index reads it: it is shown with the run, not searched by.
 * - `workers.build_id`: the build id a worker registered with (GET /v1/workers).
 * Both are nullable without a default, so adding them rewrites no row of a large table (a catalog change only).
 */
export class BuildIds1766400000000 implements MigrationInterface {
  name = 'BuildIds1766400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN build_id text`);
    await queryRunner.query(`ALTER TABLE workers ADD COLUMN build_id text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workers DROP COLUMN build_id`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN build_id`);
  }
}
