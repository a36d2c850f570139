-- runs_slot_freed: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration FlowControl1765300000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.runs_slot_freed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      DECLARE
        best record;
      BEGIN
        SELECT q.queue, h.id INTO best
          FROM (SELECT NEW.queue AS queue
                UNION
                SELECT NEW.workflow || ':' || NEW.version || coalesce(':' || s.shard, '')
                  FROM workers wk
                 CROSS JOIN jsonb_array_elements(wk.workflows) w
                  LEFT JOIN LATERAL jsonb_array_elements_text(w->'shards') s(shard) ON true
                 WHERE wk.expires_at > now() AND w->>'name' = NEW.workflow AND w->>'version' = NEW.version) q
         CROSS JOIN LATERAL (
               SELECT r.id, r.priority, r.due_at FROM runs r
                WHERE r.queue = q.queue AND r.status IN ('queued', 'waiting') AND r.due_at <= now()
                ORDER BY r.priority DESC, r.due_at LIMIT 1) h
         WHERE NOT EXISTS (SELECT 1 FROM workflow_controls c
                            WHERE c.workflow = NEW.workflow AND c.version = NEW.version
                              AND (c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)))
         ORDER BY h.priority DESC, h.due_at
         LIMIT 1;
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_runs_ready', best.queue);
        IF coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none') THEN
          INSERT INTO outbox (run_id, queue) VALUES (best.id, best.queue);
        END IF;
        RETURN NULL;
      END;
      $function$
