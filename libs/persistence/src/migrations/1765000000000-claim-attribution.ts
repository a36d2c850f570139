import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * - `runs.claimed_via`: the wake-up (an opaque reference from the worker: a Streams entry, a sorted-set
 *   member) the current claim was taken with, so a wake-up delivered too often can be traced to the run
 *   it last took.
 * - Idle claims are looked up per queue (the claim statement scans each queue on its own).
 */
export class ClaimAttribution1765000000000 implements MigrationInterface {
  name = 'ClaimAttribution1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN claimed_via text`);
    await queryRunner.query(`DROP INDEX runs_running_heartbeat_idx`);
    await queryRunner.query(`CREATE INDEX runs_idle_claims_idx ON runs (queue, heartbeat_at) WHERE status = 'running'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX runs_idle_claims_idx`);
    await queryRunner.query(`CREATE INDEX runs_running_heartbeat_idx ON runs (heartbeat_at) WHERE status = 'running'`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN claimed_via`);
  }
}
