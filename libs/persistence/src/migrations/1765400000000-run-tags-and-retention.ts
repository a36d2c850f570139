import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * - `runs.tags`: a small map of text a run is started with, to find it by (`GET /v1/runs?tag=k:v`).
 *   Indexed with GIN (`@>`), only for runs that have tags: untagged runs, the common case, cost the
 *   index nothing on insert.
 * - Retention (apps/coordinator/src/retention) deletes finished runs older than their workflow's
 *   window, oldest first, per workflow version: `runs_finished_idx` finds them without reading the
 *   runs that are not finished or not old enough. Deleting a run cascades to its events, which had
 *   only an index on pending events: without `run_events_run_idx` every deleted run would scan them.
 *   Dead letters are deleted by age (`dead_letters_created_idx`).
 * - `workflows.retention_ms`: the window a workflow version declares in code (`defineWorkflow({ retentionMs })`),
 *   as its workers last registered it; null: none declared.
 */
export class RunTagsAndRetention1765400000000 implements MigrationInterface {
  name = 'RunTagsAndRetention1765400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // A constant default: PostgreSQL stores it in the catalogue, existing rows are not rewritten.
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN tags jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(`CREATE INDEX runs_tags_idx ON runs USING gin (tags jsonb_path_ops) WHERE tags <> '{}'`);
    await queryRunner.query(`CREATE INDEX runs_finished_idx ON runs (workflow, version, finished_at) WHERE status IN ('completed', 'failed', 'cancelled')`);
    await queryRunner.query(`CREATE INDEX run_events_run_idx ON run_events (run_id)`);
    await queryRunner.query(`CREATE INDEX dead_letters_created_idx ON dead_letters (created_at)`);
    await queryRunner.query(`ALTER TABLE workflows ADD COLUMN retention_ms bigint CHECK (retention_ms >= 0)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workflows DROP COLUMN retention_ms`);
    await queryRunner.query(`DROP INDEX dead_letters_created_idx`);
    await queryRunner.query(`DROP INDEX run_events_run_idx`);
    await queryRunner.query(`DROP INDEX runs_finished_idx`);
    await queryRunner.query(`DROP INDEX runs_tags_idx`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN tags`);
  }
}
