-- run_partition_end: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunTablesPartitionedByWeek1767600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_partition_end(partition regclass)
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
        SELECT substring(pg_get_expr(relpartbound, oid) FROM 'TO \(''([0-9a-f-]{36})''\)')::uuid FROM pg_class WHERE oid = partition
      $function$
