-- runs_notify_due: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration DueTimers1764800000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.runs_notify_due()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        PERFORM pg_notify('wf_runs_due', (extract(epoch FROM NEW.due_at) * 1000)::text || ' ' || NEW.id || ' ' || NEW.queue);
        RETURN NULL;
      END;
      $function$
