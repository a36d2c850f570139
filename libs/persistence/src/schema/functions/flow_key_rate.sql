-- flow_key_rate: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration KeyRateLimits1765600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.flow_key_rate(family text)
 RETURNS double precision
 LANGUAGE plpgsql
AS $function$
      BEGIN
        RETURN (SELECT c.rate_per_key_per_second FROM workflow_controls c
                 WHERE c.workflow = split_part(family, ':', 1) AND c.version = split_part(family, ':', 2));
      END;
      $function$
