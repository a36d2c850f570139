import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `workers.declared_schedules`: the schedules each worker's code declares, as `[{workflow, version, name}]`
 * (only for the versions whose declarations it sent). A declared schedule is deleted only once no online
 * worker declares it, so during a rolling deploy workers of one version whose code declares different
 * schedules do not delete and re-create each other's (which would give it a new id, new idempotency keys,
 * and lose its pause). A few rows per worker, read only by registrations that changed a declaration.
 */
export class WorkerDeclaredSchedules1765800000000 implements MigrationInterface {
  name = 'WorkerDeclaredSchedules1765800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workers ADD COLUMN declared_schedules jsonb NOT NULL DEFAULT '[]'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workers DROP COLUMN declared_schedules`);
  }
}
