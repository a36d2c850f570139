import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The worker registry (apps/coordinator/src/workers):
 * - `workers`: one row per worker id, rewritten by each of its registrations (at start, then every
 *   interval it names). It is online while `expires_at` (three intervals after its last registration)
 *   is ahead; rows of workers gone for an hour are dropped.
 * - `workflows`: every workflow version a worker has registered, kept after its workers are gone, so
 *   settings of a version (flow control, retention) have a row to live on.
 */
export class WorkerRegistry1765100000000 implements MigrationInterface {
  name = 'WorkerRegistry1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE workers (
        id           text PRIMARY KEY,
        subscriber   text NOT NULL,
        failed_over  boolean NOT NULL,
        concurrency  integer NOT NULL,
        runs_held    integer NOT NULL,
        -- [{name, version, shards}] as the worker registered them.
        workflows    jsonb NOT NULL,
        started_at   timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now(),
        expires_at   timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE workflows (
        workflow      text NOT NULL,
        version       text NOT NULL,
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workflow, version)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE workflows`);
    await queryRunner.query(`DROP TABLE workers`);
  }
}
