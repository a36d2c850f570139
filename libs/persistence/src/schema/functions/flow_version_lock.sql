-- flow_version_lock: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration FlowAdmissionLock1765700000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.flow_version_lock(workflow text, version text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE
AS $function$
        SELECT hashtextextended('wf_flow:' || workflow || ':' || version, 0)
      $function$
