-- run_transitions_notify: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration DashboardFeed1765500000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_transitions_notify()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM feed_watchers WHERE expires_at > now()) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_run_changes', '[' || string_agg(entry, ',' ORDER BY n) || ']')
           FROM (SELECT entry, n, sum(octet_length(entry) + 1) OVER (ORDER BY n) AS upto
                   FROM (SELECT json_build_array(a.run_id, r.workflow, r.version, a.to_status, a.revision,
                                                 floor(extract(epoch FROM a.created_at) * 1000))::text AS entry,
                                a.id AS n
                           FROM added a JOIN runs r ON r.id = a.run_id) e) s
          GROUP BY (upto - 1) / 7000
          ORDER BY (upto - 1) / 7000;
        RETURN NULL;
      END;
      $function$
