-- run_transitions_only_with_their_run: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration HistoryWithoutForeignKeys1767400000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_transitions_only_with_their_run()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id FROM removed) d JOIN runs r ON r.id = d.run_id) THEN
          RAISE EXCEPTION 'run_transitions is append-only'
            USING HINT = 'history is removed only with its run, through delete_runs()';
        END IF;
        RETURN NULL;
      END;
      $function$
