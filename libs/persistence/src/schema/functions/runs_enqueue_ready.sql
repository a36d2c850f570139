-- runs_enqueue_ready: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration StartPublishes1766000000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.runs_enqueue_ready()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF coalesce(current_setting('wf.dispatch', true), 'none') IN ('', 'none') OR current_setting('wf.start_outbox', true) = 'on' THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES (NEW.id, NEW.queue, greatest(NEW.due_at, now()));
        RETURN NULL;
      END;
      $function$
