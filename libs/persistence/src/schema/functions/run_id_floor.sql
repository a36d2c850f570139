-- run_id_floor: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration RunTablesPartitionedByWeek1767600000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.run_id_floor(at timestamp with time zone)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE
AS $function$
        SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7000-8000-000000000000')::uuid
          FROM lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') AS h
      $function$
