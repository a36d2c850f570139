-- delete_runs: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration HistoryWithoutForeignKeys1767400000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.delete_runs(ids uuid[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
AS $function$
      DECLARE
        deleted uuid[];
      BEGIN
        PERFORM set_config('wf.deleting_runs', 'on', true);
        WITH gone AS (
          DELETE FROM runs WHERE id = ANY(ids) AND status IN ('completed', 'failed', 'cancelled') RETURNING id
        )
        SELECT coalesce(array_agg(id), '{}') INTO deleted FROM gone;
        DELETE FROM tasks WHERE run_id = ANY(deleted);
        DELETE FROM run_transitions WHERE run_id = ANY(deleted);
        DELETE FROM run_events WHERE run_id = ANY(deleted);
        DELETE FROM run_updates WHERE run_id = ANY(deleted);
        DELETE FROM run_values WHERE run_id = ANY(deleted);
        UPDATE runs SET parent_id = NULL WHERE parent_id = ANY(deleted);
        PERFORM set_config('wf.deleting_runs', 'off', true);
        RETURN QUERY SELECT unnest(deleted);
      END;
      $function$
