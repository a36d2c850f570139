import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * flow_admit as this migration leaves it: as the flow-control migration made it, but first taking the shared
 * advisory lock of each version claimed from, in one order. Written out whole, as every migration's SQL is
 * (this one was once made by editing the flow-control migration's text).
 */
const FLOW_ADMIT_LOCKED = `
      CREATE OR REPLACE FUNCTION flow_admit(queues text[], wanted integer[])
      RETURNS TABLE (queue text, family text, fresh integer, takeovers boolean, family_cap integer, counts_slot boolean,
                     per_key integer, full_keys text[], key_names text[], key_running integer[],
                     rate double precision, tokens double precision, admitted_at timestamptz, rate_wakeup_at timestamptz)
      LANGUAGE plpgsql VOLATILE AS $$
      #variable_conflict use_column
      DECLARE
        c record;
        running integer;
        q record;
      BEGIN
        -- Shared per version: claims do not wait for each other here, only for a limit being set.
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(v.workflow, v.version))
           FROM (SELECT DISTINCT split_part(u.q, ':', 1) AS workflow, split_part(u.q, ':', 2) AS version FROM unnest(queues) AS u(q)) v
          ORDER BY v.workflow, v.version;
        FOR c IN
          SELECT wc.* FROM workflow_controls wc
           WHERE wc.active AND (wc.workflow, wc.version) IN (SELECT split_part(u.q, ':', 1), split_part(u.q, ':', 2) FROM unnest(queues) AS u(q))
           ORDER BY wc.workflow, wc.version
           FOR UPDATE OF wc
        LOOP
          family := c.workflow || ':' || c.version;
          counts_slot := c.concurrency IS NOT NULL OR c.concurrency_per_key IS NOT NULL;
          per_key := c.concurrency_per_key;
          family_cap := NULL;
          IF c.concurrency IS NOT NULL THEN
            SELECT count(*) INTO running FROM runs r
             WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot;
            family_cap := greatest(c.concurrency - running, 0);
          END IF;
          full_keys := '{}';
          key_names := '{}';
          key_running := '{}';
          IF c.concurrency_per_key IS NOT NULL THEN
            SELECT coalesce(array_agg(k.key), '{}'), coalesce(array_agg(k.n), '{}'),
                   coalesce(array_agg(k.key) FILTER (WHERE k.n >= c.concurrency_per_key), '{}')
              INTO key_names, key_running, full_keys
              FROM (SELECT r.concurrency_key AS key, count(*)::integer AS n FROM runs r
                     WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot
                       AND r.concurrency_key IS NOT NULL
                     GROUP BY r.concurrency_key) k;
          END IF;
          rate := c.rate_per_second;
          admitted_at := clock_timestamp();
          rate_wakeup_at := c.rate_wakeup_at;
          tokens := NULL;
          IF rate IS NOT NULL THEN
            tokens := least(greatest(rate, 1),
                            coalesce(c.tokens, greatest(rate, 1)) + rate * greatest(extract(epoch FROM admitted_at - coalesce(c.refilled_at, admitted_at)), 0));
            family_cap := least(coalesce(family_cap, 2147483647), floor(tokens)::integer);
          END IF;
          FOR q IN SELECT x.queue, x.n FROM unnest(queues, wanted) AS x(queue, n)
                    WHERE split_part(x.queue, ':', 1) = c.workflow AND split_part(x.queue, ':', 2) = c.version
          LOOP
            queue := q.queue;
            takeovers := NOT (c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards));
            fresh := CASE WHEN takeovers THEN least(q.n, coalesce(family_cap, q.n)) ELSE 0 END;
            RETURN NEXT;
          END LOOP;
        END LOOP;
      END;
      $$`;

/** flow_admit as the flow-control migration made it, put back on the way down. */
const FLOW_ADMIT_UNLOCKED = `
      CREATE OR REPLACE FUNCTION flow_admit(queues text[], wanted integer[])
      RETURNS TABLE (queue text, family text, fresh integer, takeovers boolean, family_cap integer, counts_slot boolean,
                     per_key integer, full_keys text[], key_names text[], key_running integer[],
                     rate double precision, tokens double precision, admitted_at timestamptz, rate_wakeup_at timestamptz)
      LANGUAGE plpgsql VOLATILE AS $$
      #variable_conflict use_column
      DECLARE
        c record;
        running integer;
        q record;
      BEGIN
        FOR c IN
          SELECT wc.* FROM workflow_controls wc
           WHERE wc.active AND (wc.workflow, wc.version) IN (SELECT split_part(u.q, ':', 1), split_part(u.q, ':', 2) FROM unnest(queues) AS u(q))
           ORDER BY wc.workflow, wc.version
           FOR UPDATE OF wc
        LOOP
          family := c.workflow || ':' || c.version;
          counts_slot := c.concurrency IS NOT NULL OR c.concurrency_per_key IS NOT NULL;
          per_key := c.concurrency_per_key;
          family_cap := NULL;
          IF c.concurrency IS NOT NULL THEN
            SELECT count(*) INTO running FROM runs r
             WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot;
            family_cap := greatest(c.concurrency - running, 0);
          END IF;
          full_keys := '{}';
          key_names := '{}';
          key_running := '{}';
          IF c.concurrency_per_key IS NOT NULL THEN
            SELECT coalesce(array_agg(k.key), '{}'), coalesce(array_agg(k.n), '{}'),
                   coalesce(array_agg(k.key) FILTER (WHERE k.n >= c.concurrency_per_key), '{}')
              INTO key_names, key_running, full_keys
              FROM (SELECT r.concurrency_key AS key, count(*)::integer AS n FROM runs r
                     WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot
                       AND r.concurrency_key IS NOT NULL
                     GROUP BY r.concurrency_key) k;
          END IF;
          rate := c.rate_per_second;
          admitted_at := clock_timestamp();
          rate_wakeup_at := c.rate_wakeup_at;
          tokens := NULL;
          IF rate IS NOT NULL THEN
            tokens := least(greatest(rate, 1),
                            coalesce(c.tokens, greatest(rate, 1)) + rate * greatest(extract(epoch FROM admitted_at - coalesce(c.refilled_at, admitted_at)), 0));
            family_cap := least(coalesce(family_cap, 2147483647), floor(tokens)::integer);
          END IF;
          FOR q IN SELECT x.queue, x.n FROM unnest(queues, wanted) AS x(queue, n)
                    WHERE split_part(x.queue, ':', 1) = c.workflow AND split_part(x.queue, ':', 2) = c.version
          LOOP
            queue := q.queue;
            takeovers := NOT (c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards));
            fresh := CASE WHEN takeovers THEN least(q.n, coalesce(family_cap, q.n)) ELSE 0 END;
            RETURN NEXT;
          END LOOP;
        END LOOP;
      END;
      $$`;

/**
 * A concurrency limit set while a claim is in flight must count that claim's runs. flow_admit locks only
 * the control rows that are already active, so a claim of a version without limits took no lock, and a
 * limit set meanwhile counted the version's running runs in a snapshot that did not yet see the claim's:
 * they never held a slot, and the limit was exceeded by as many. Now every claim takes a shared advisory
 * lock per version it claims from (claims do not wait for each other), and setting or declaring a limit
 * takes it exclusively before counting (countRunningSlots, libs/persistence/src/sql/workflow-controls.sql.ts), in a statement of its
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
    await queryRunner.query(FLOW_ADMIT_UNLOCKED);
    await queryRunner.query(`DROP FUNCTION flow_version_lock(text, text)`);
  }
}
