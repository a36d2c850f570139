-- tasks_resolved_at: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration DashboardFeed1765500000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.tasks_resolved_at()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        NEW.finished_at := now();
        RETURN NEW;
      END;
      $function$
