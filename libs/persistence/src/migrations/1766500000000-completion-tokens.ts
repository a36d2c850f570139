import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Completion tokens (`ctx.awaitExternal`, `POST /v1/completions/{token}`; docs/architecture.md, "Completion tokens").
 * - Steps of kind `token` (the token, recorded completed where the workflow made it, so a re-execution hands out the
 *   same one) and `external` (the wait on it, a suspension like an event wait).
 * - `completion_tokens`: one row per token, for the route's lookup (its primary key), its expiry, and an outcome
 *   that came before the run waited (kept until it waits). Its run's deletion (retention) takes it along
 *   (ON DELETE CASCADE); `(run_id, wait_key)` is unique, and its index is what the cascade and the wait read.
 * The kinds' check is added NOT VALID and validated apart, as PatchMarkers did it: the table is not locked while
 * its rows are checked.
 */
export class CompletionTokens1766500000000 implements MigrationInterface {
  name = 'CompletionTokens1766500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(
      `ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external')) NOT VALID`,
    );
    await queryRunner.query(`ALTER TABLE tasks VALIDATE CONSTRAINT tasks_kind_check`);
    await queryRunner.query(`CREATE TABLE completion_tokens (
      token text PRIMARY KEY,
      run_id uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      wait_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      completed_at timestamptz,
      outcome jsonb,
      CONSTRAINT completion_tokens_wait_unique UNIQUE (run_id, wait_key),
      CONSTRAINT completion_tokens_outcome_check CHECK ((completed_at IS NULL) = (outcome IS NULL))
    )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE completion_tokens`);
    await queryRunner.query(`DELETE FROM tasks WHERE kind IN ('token', 'external')`);
    await queryRunner.query(`ALTER TABLE tasks DROP CONSTRAINT tasks_kind_check`);
    await queryRunner.query(`ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry', 'patch'))`);
  }
}
