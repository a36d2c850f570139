-- runs_claim_idempotency_key: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration IdempotencyKeys1767100000000 (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
CREATE OR REPLACE FUNCTION public.runs_claim_idempotency_key()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        INSERT INTO idempotency_keys (workflow, idempotency_key, run_id) VALUES (NEW.workflow, NEW.idempotency_key, NEW.id)
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          RETURN NEW;
        END IF;
        -- The key is taken (by a run committed, or one whose transaction this insert waited for): no run.
        RETURN NULL;
      END;
      $function$
