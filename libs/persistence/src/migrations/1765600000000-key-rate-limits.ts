import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate limits per concurrency key (docs/architecture.md, "Flow control"): runs of a version with the same
 * `concurrency_key` share a token bucket of `rate_per_key_per_second` (runs without a key are not limited
 * by it). Enforced by the claim statement, which already holds the version's control row (flow_admit).
 *
 * - `workflow_controls.{api,code}_rate_per_key_per_second` and the effective `rate_per_key_per_second`
 *   (the API's where it set one, else the code's); `active` now includes it.
 * - `workflow_key_buckets`: one row per key whose bucket is not full (a missing row is a full bucket):
 *   tokens as of `refilled_at`, and `delayed_until`, the latest due time the claim gave a run of the key
 *   it delayed to its token (runs delayed later line up behind it, so they keep their order).
 */
export class KeyRateLimits1765600000000 implements MigrationInterface {
  name = 'KeyRateLimits1765600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE workflow_controls
        ADD COLUMN api_rate_per_key_per_second double precision CHECK (api_rate_per_key_per_second > 0),
        ADD COLUMN code_rate_per_key_per_second double precision CHECK (code_rate_per_key_per_second > 0),
        ADD COLUMN rate_per_key_per_second double precision
          GENERATED ALWAYS AS (coalesce(api_rate_per_key_per_second, code_rate_per_key_per_second)) STORED`);
    // A generated column's expression cannot be altered: replaced, with the per-key rate added.
    await queryRunner.query(`ALTER TABLE workflow_controls DROP COLUMN active`);
    await queryRunner.query(`
      ALTER TABLE workflow_controls ADD COLUMN active boolean GENERATED ALWAYS AS (
        paused OR cardinality(paused_shards) > 0
        OR coalesce(api_concurrency, code_concurrency, api_concurrency_per_key, code_concurrency_per_key) IS NOT NULL
        OR coalesce(api_rate_per_second, code_rate_per_second, api_rate_per_key_per_second, code_rate_per_key_per_second) IS NOT NULL) STORED`);

    await queryRunner.query(`
      CREATE TABLE workflow_key_buckets (
        workflow      text NOT NULL,
        version       text NOT NULL,
        key           text NOT NULL,
        tokens        double precision NOT NULL CHECK (tokens >= 0),
        refilled_at   timestamptz NOT NULL,
        delayed_until timestamptz,
        PRIMARY KEY (workflow, version, key)
      )`);
    // The claim deletes, a few at a time, the buckets that have been full for a while (refilled long ago).
    await queryRunner.query(`CREATE INDEX workflow_key_buckets_refilled_idx ON workflow_key_buckets (workflow, version, refilled_at)`);

    // The version's per-key rate, read in a fresh snapshot (VOLATILE). Called by the claim statement for
    // a controlled version once flow_admit holds its control row: a limit set while the claim waited
    // for that lock is seen (the claim statement's own snapshot, older, would miss it).
    await queryRunner.query(`
      CREATE FUNCTION flow_key_rate(family text) RETURNS double precision LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        RETURN (SELECT c.rate_per_key_per_second FROM workflow_controls c
                 WHERE c.workflow = split_part(family, ':', 1) AND c.version = split_part(family, ':', 2));
      END;
      $$`);

    // The buckets of these keys of a version, refilled to now: called by the claim statement while
    // flow_admit holds the version's control row, so claimers of the version take turns here. Locks the
    // rows in key order and reads them in a fresh snapshot (VOLATILE): the tokens the previous holder of
    // the control row charged are seen. A key without a row has a full bucket (one second's worth, at
    // least 1). Also deletes up to 100 of the version's buckets that are full by now and delay nothing,
    // so the rows of idle keys do not pile up.
    await queryRunner.query(`
      CREATE FUNCTION flow_key_tokens(family text, rate double precision, keys text[])
      RETURNS TABLE (key text, tokens double precision, delayed_until timestamptz, admitted_at timestamptz)
      LANGUAGE plpgsql VOLATILE AS $$
      #variable_conflict use_column
      DECLARE
        fam_workflow text := split_part(family, ':', 1);
        fam_version text := split_part(family, ':', 2);
        capacity double precision := greatest(rate, 1);
        now_at timestamptz := clock_timestamp();
      BEGIN
        DELETE FROM workflow_key_buckets b
         WHERE b.ctid IN (SELECT x.ctid FROM workflow_key_buckets x
                           WHERE x.workflow = fam_workflow AND x.version = fam_version
                             AND x.refilled_at < now_at - capacity / rate * interval '1 second'
                             AND (x.delayed_until IS NULL OR x.delayed_until < now_at) AND x.key <> ALL (keys)
                           LIMIT 100);
        RETURN QUERY
          SELECT k.key, least(capacity, coalesce(b.tokens + rate * greatest(extract(epoch FROM now_at - b.refilled_at), 0), capacity)),
                 b.delayed_until, now_at
            FROM unnest(keys) AS k(key)
            LEFT JOIN LATERAL (SELECT x.tokens, x.refilled_at, x.delayed_until FROM workflow_key_buckets x
                                WHERE x.workflow = fam_workflow AND x.version = fam_version AND x.key = k.key
                                FOR UPDATE) b ON true
           ORDER BY k.key;
      END;
      $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION flow_key_tokens(text, double precision, text[])`);
    await queryRunner.query(`DROP FUNCTION flow_key_rate(text)`);
    await queryRunner.query(`DROP TABLE workflow_key_buckets`);
    await queryRunner.query(`ALTER TABLE workflow_controls DROP COLUMN active`);
    await queryRunner.query(`
      ALTER TABLE workflow_controls ADD COLUMN active boolean GENERATED ALWAYS AS (
        paused OR cardinality(paused_shards) > 0
        OR coalesce(api_concurrency, code_concurrency, api_concurrency_per_key, code_concurrency_per_key) IS NOT NULL
        OR coalesce(api_rate_per_second, code_rate_per_second) IS NOT NULL) STORED`);
    await queryRunner.query(`
      ALTER TABLE workflow_controls DROP COLUMN rate_per_key_per_second,
        DROP COLUMN api_rate_per_key_per_second, DROP COLUMN code_rate_per_key_per_second`);
  }
}
