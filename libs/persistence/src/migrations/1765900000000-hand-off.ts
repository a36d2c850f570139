import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `flow_hand_off(workflow, version, queue)`: may a run started now go straight to a claim waiting for
 * its queue (HandOffRepository), skipping the queue? Only when the version has no active control
 * (paused, or a limit: those are flow_admit's to apply) and the queue has no ready run (which would
 * come first by priority and age). It takes the version's admission lock shared, as every claim does
 * (flow_admit), so a limit being set waits for the hand-off to commit and then counts its run; and it
 * reads after that lock in a fresh snapshot (the function is VOLATILE), so a hand-off that waited for a
 * limit to commit sees it. The ready-run probe is one index scan of runs_ready_idx.
 */
export class HandOff1765900000000 implements MigrationInterface {
  name = 'HandOff1765900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION flow_hand_off(workflow text, version text, queue text) RETURNS boolean
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(workflow, version));
        RETURN NOT EXISTS (SELECT 1 FROM workflow_controls c WHERE c.active AND c.workflow = $1 AND c.version = $2)
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status IN ('queued', 'waiting') AND r.queue = $3 AND r.due_at <= now());
      END;
      $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION flow_hand_off(text, text, text)`);
  }
}
