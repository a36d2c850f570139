-- add_run_weeks: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunTablesPartitionedByWeek1767600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.add_run_weeks(parent regclass, through timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
      DECLARE
        week timestamptz;
        made integer := 0;
        name text;
      BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE', parent);
        week := run_weeks_end(parent);
        IF week IS NULL THEN
          RAISE EXCEPTION '% has no partition with an upper bound to add weeks after', parent;
        END IF;
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
