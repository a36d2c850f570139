import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a run shows of itself while it runs and after it ended (issue 37; docs/architecture.md, "Queries, exposed
 * values and progress"):
 * - `run_values`: the values a workflow exposes (`ctx.expose(name, value)`, and the answers of its query handlers,
 *   which its worker evaluates and records the same way), one row per run and name, the last one written. Written
 *   under the run's claim (fenced by its revision, as every worker write); `GET /v1/runs/{id}/queries/{name}` reads
 *   them. Deleted with their run (ON DELETE CASCADE: retention's delete_runs deletes the run).
 * - `runs.progress`, `runs.progress_at`: the last value `ctx.progress` reported and when it was recorded (NULL
 *   until one was). Nullable without a default: adding them rewrites no row (a catalog change only). Not indexed, so
 *   writing them leaves the run's index entries alone (a HOT update when the page has room).
 */
export class RunValues1766600000000 implements MigrationInterface {
  name = 'RunValues1766600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE run_values (
        run_id     uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
        value      jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, name)
      )`);
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN progress jsonb, ADD COLUMN progress_at timestamptz`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN progress, DROP COLUMN progress_at`);
    await queryRunner.query(`DROP TABLE run_values`);
  }
}
