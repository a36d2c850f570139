-- add_run_weeks: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunTablesPartitionedByWeek1767600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.add_run_weeks(parent regclass, through timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
      DECLARE
        last_bound uuid;
        week timestamptz;
        made integer := 0;
        name text;
      BEGIN
        SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([0-9a-f-]{36})''\)')::uuid INTO last_bound
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = parent ORDER BY 1 DESC NULLS LAST LIMIT 1;
        IF last_bound IS NULL THEN
          RAISE EXCEPTION '% has no partition with an upper bound to add weeks after', parent;
        END IF;
        week := to_timestamp(('x' || substr(replace(last_bound::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0);
        WHILE week <= through LOOP
          name := format('%s_w%s', (SELECT relname FROM pg_class WHERE oid = parent), to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'));
          EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)',
                         name, parent);
          EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                         parent, name, run_id_floor(week), run_id_floor(week + interval '168 hours'));
          made := made + 1;
          week := week + interval '168 hours';
        END LOOP;
        RETURN made;
      END;
      $function$
