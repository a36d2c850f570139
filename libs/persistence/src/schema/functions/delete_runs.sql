-- delete_runs: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunShardAndHistoryGuard1764700000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.delete_runs(ids uuid[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
AS $function$
      BEGIN
        PERFORM set_config('wf.deleting_runs', 'on', true);
        RETURN QUERY
          WITH deleted AS (
            DELETE FROM runs WHERE id = ANY(ids) AND status IN ('completed', 'failed', 'cancelled') RETURNING id
          )
          SELECT id FROM deleted;
        PERFORM set_config('wf.deleting_runs', 'off', true);
      END;
      $function$
