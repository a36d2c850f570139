-- flow_hand_off: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration HandOff1765900000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.flow_hand_off(workflow text, version text, queues text[], idle_ms double precision)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(workflow, version));
        RETURN NOT EXISTS (SELECT 1 FROM workflow_controls c WHERE c.active AND c.workflow = $1 AND c.version = $2)
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status IN ('queued', 'waiting') AND r.queue = ANY ($3) AND r.due_at <= now())
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.queue = ANY ($3) AND r.heartbeat_at < now() - $4 * interval '1 millisecond');
      END;
      $function$
