-- run_transitions_append_only: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration HistoryWithoutForeignKeys1767400000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_transitions_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'run_transitions is append-only'
          USING HINT = 'history is removed only with its run, through delete_runs()';
      END;
      $function$
