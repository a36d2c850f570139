import type { MigrationInterface, QueryRunner } from 'typeorm';
import { FLOW_ADMIT } from './1765300000000-flow-control';

/** flow_admit as the flow-control migration made it, to replace (and to put back on the way down). */
const FLOW_ADMIT_REPLACED = FLOW_ADMIT.replace('CREATE FUNCTION flow_admit(', 'CREATE OR REPLACE FUNCTION flow_admit(');

/** The same, first taking the shared advisory lock of each version claimed from, in one order. */
const FLOW_ADMIT_LOCKED = FLOW_ADMIT_REPLACED.replace(
  `      BEGIN
        FOR c IN`,
  `      BEGIN
        -- Shared per version: claims do not wait for each other here, only for a limit being set.
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(v.workflow, v.version))
           FROM (SELECT DISTINCT split_part(u.q, ':', 1) AS workflow, split_part(u.q, ':', 2) AS version FROM unnest(queues) AS u(q)) v
          ORDER BY v.workflow, v.version;
        FOR c IN`,
);
// The text this edits is fixed (an applied migration never changes); this catches an edit of it anyway.
if (FLOW_ADMIT_LOCKED === FLOW_ADMIT_REPLACED) throw new Error('flow_admit no longer has the text the admission lock is inserted into');

/**
 * A concurrency limit set while a claim is in flight must count that claim's runs. flow_admit locks only
 * the control rows that are already active, so a claim of a version without limits took no lock, and a
 * limit set meanwhile counted the version's running runs in a snapshot that did not yet see the claim's:
 * they never held a slot, and the limit was exceeded by as many. Now every claim takes a shared advisory
 * lock per version it claims from (claims do not wait for each other), and setting or declaring a limit
 * takes it exclusively before counting (WorkflowControlsRepository.countRunning), in a statement of its
 * own: it waits for the claims in flight to commit and then counts in a fresh snapshot that sees their
 * runs; a claim that starts after it waits for the limit to commit and then sees the active control row.
 */
export class FlowAdmissionLock1765700000000 implements MigrationInterface {
  name = 'FlowAdmissionLock1765700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The advisory lock key of a workflow version (claims and limit changes agree on it).
    await queryRunner.query(`
      CREATE FUNCTION flow_version_lock(workflow text, version text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
        SELECT hashtextextended('wf_flow:' || workflow || ':' || version, 0)
      $$`);
    await queryRunner.query(FLOW_ADMIT_LOCKED);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(FLOW_ADMIT_REPLACED);
    await queryRunner.query(`DROP FUNCTION flow_version_lock(text, text)`);
  }
}
