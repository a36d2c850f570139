-- runs_delete_guard: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunShardAndHistoryGuard1764700000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.runs_delete_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'runs are deleted only through delete_runs()'
          USING HINT = 'SELECT delete_runs(ARRAY[...]::uuid[]) deletes finished runs with their history';
      END;
      $function$
