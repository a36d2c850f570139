import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `runs.rate_delayed`: the run waits for a token of its key's rate that a claim gave it (its due_at), and
 * keeps its place in its key's line when it comes due. A claim that takes a delayed run later than its time
 * (the bucket sat full meanwhile, and at a rate of 1/s or less a bucket holds one token) leaves the next
 * delayed run's token a little after that run's time: such a run waits for it where it is, and a run of its
 * key not delayed yet waits behind every delayed one, even when it is due before them. A claim that takes
 * the run resets it; no index reads it (the claim reads it of the runs its window fetched already).
 */
export class RateDelayedRuns1766100000000 implements MigrationInterface {
  name = 'RateDelayedRuns1766100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN rate_delayed boolean NOT NULL DEFAULT false`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN rate_delayed`);
  }
}
