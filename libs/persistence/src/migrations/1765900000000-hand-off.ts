import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `flow_hand_off(workflow, version, queues, idle_ms)`: may a run of `workflow`:`version` started now go
 * straight to a claim waiting for `queues` (RunControlRepository.start with `handedTo`), skipping the
 * queue? Only when what the claim statement would take first is not there: the version has no active
 * control (paused, or a limit: those are flow_admit's to apply), and none of the claim's queues has a
 * ready run (which comes first by priority and age) or a run whose claim went idle (a takeover comes first).
 * It takes the version's admission lock shared, as every claim does (flow_admit), so a limit being set
 * waits for the hand-off to commit and then counts its run; and it reads after that lock in a fresh
 * snapshot (the function is VOLATILE), so a hand-off that waited for a limit to commit sees it. The
 * probes are index scans of runs_ready_idx and runs_idle_claims_idx.
 */
export class HandOff1765900000000 implements MigrationInterface {
  name = 'HandOff1765900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION flow_hand_off(workflow text, version text, queues text[], idle_ms double precision) RETURNS boolean
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(workflow, version));
        RETURN NOT EXISTS (SELECT 1 FROM workflow_controls c WHERE c.active AND c.workflow = $1 AND c.version = $2)
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status IN ('queued', 'waiting') AND r.queue = ANY ($3) AND r.due_at <= now())
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.queue = ANY ($3) AND r.heartbeat_at < now() - $4 * interval '1 millisecond');
      END;
      $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION flow_hand_off(text, text, text[], double precision)`);
  }
}
