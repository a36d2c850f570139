-- flow_key_tokens: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration KeyRateLimits1765600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.flow_key_tokens(family text, rate double precision, keys text[])
 RETURNS TABLE(key text, tokens double precision, delayed_until timestamp with time zone, admitted_at timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
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
      $function$
