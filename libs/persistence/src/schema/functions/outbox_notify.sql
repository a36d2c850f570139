-- outbox_notify: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration StartPublishes1766000000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.outbox_notify()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF current_setting('wf.start_outbox', true) = 'on' OR NOT EXISTS (SELECT 1 FROM inserted_rows) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_outbox', '');
        RETURN NULL;
      END;
      $function$
