-- run_weeks_end: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunTablesPartitionedByWeek1767600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_weeks_end(parent regclass)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
        SELECT to_timestamp(('x' || substr(replace(bound::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
          FROM (SELECT run_partition_end(inhrelid) AS bound FROM pg_inherits WHERE inhparent = parent) b
         ORDER BY bound DESC NULLS LAST LIMIT 1
      $function$
