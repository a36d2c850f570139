import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency keys in a table of their own, `idempotency_keys`: a workflow's key → the run it started.
 *
 * A unique index on a partitioned table must hold the partition key, so `runs_idempotency_key_idx` could not stay
 * the arbiter of every start once `runs` is partitioned by run id (docs/benchmarks.md, "Retention at W1's rate").
 * The keys table is that arbiter from now on: a BEFORE INSERT trigger on `runs` claims a keyed run's key
 * (`INSERT … ON CONFLICT DO NOTHING`) and leaves the run out when the key is taken, as the starts' own `ON CONFLICT`
 * did. Every statement that inserts runs gets it, whatever its form: a start, a batch, a hand-off, a schedule's
 * firing. A concurrent insert of the same key waits for the other transaction, and is left out if it committed,
 * so exactly one run holds a key (the starts' statements, runs-start.sql.ts).
 *
 * The key goes with its run: a foreign key with ON DELETE CASCADE (delete_runs), which TRUNCATE … CASCADE follows
 * too. It is checked at commit (DEFERRABLE INITIALLY DEFERRED), since the trigger writes the key before its run's
 * row exists; so a key is never committed without its run.
 *
 * `runs_idempotency_key_idx` stays, unique, for this release: a coordinator older than this one, still serving in
 * a rolling upgrade, names it in its starts' `ON CONFLICT`. Its runs claim their keys through the trigger too, so
 * both agree.
 *
 * Upgrading a database that holds keyed runs, in three transactions (the next two migrations):
 * 1. This one: the table, the trigger and the foreign key (not yet validated). Catalog work only: `runs` is locked
 *    against writes (SHARE ROW EXCLUSIVE, for CREATE TRIGGER) for milliseconds, once the writes under way commit.
 * 2. The keys of the runs started before it, copied without blocking writes. Those of unfinished runs first,
 *    without a lock: only finished runs are ever deleted. Then those of finished runs, each locked FOR KEY SHARE
 *    until the copy commits, so that retention cannot delete it meanwhile (it skips locked runs) and no key
 *    outlives its run; a run deleted before the copy reaches it is not copied. Nothing else writes a finished run
 *    but a retry of a failed one, which waits for the copy. (A run that finished during the copy and was deleted
 *    before it committed, under a window shorter than the copy, fails the foreign key at commit: the migration is
 *    then applied again at the next start.) Meanwhile an older coordinator's start that repeats one of those old
 *    keys fails at commit (the trigger claimed the key for a run its `ON CONFLICT` then left out, and the foreign
 *    key refuses that): an error the client retries, never a second run.
 * 3. The foreign key validated, which locks neither table against writes.
 */
export class IdempotencyKeys1767100000000 implements MigrationInterface {
  name = 'IdempotencyKeys1767100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE idempotency_keys (
        workflow text NOT NULL,
        idempotency_key text NOT NULL,
        run_id uuid NOT NULL,
        PRIMARY KEY (workflow, idempotency_key)
      )`);
    // For the cascade from a deleted run (a delete without it would read the whole table per run).
    await queryRunner.query(`CREATE INDEX idempotency_keys_run_idx ON idempotency_keys (run_id)`);
    await queryRunner.query(`
      CREATE FUNCTION runs_claim_idempotency_key() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO idempotency_keys (workflow, idempotency_key, run_id) VALUES (NEW.workflow, NEW.idempotency_key, NEW.id)
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          RETURN NEW;
        END IF;
        -- The key is taken (by a run committed, or one whose transaction this insert waited for): no run.
        RETURN NULL;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER runs_claim_idempotency_key BEFORE INSERT ON runs
        FOR EACH ROW WHEN (NEW.idempotency_key IS NOT NULL) EXECUTE FUNCTION runs_claim_idempotency_key()`);
    await queryRunner.query(`
      ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs (id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED NOT VALID`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER runs_claim_idempotency_key ON runs`);
    await queryRunner.query(`DROP FUNCTION runs_claim_idempotency_key()`);
    await queryRunner.query(`DROP TABLE idempotency_keys`);
  }
}

/** The keys of the runs started before the trigger (step 2 above). */
export class IdempotencyKeysCopied1767100000001 implements MigrationInterface {
  name = 'IdempotencyKeysCopied1767100000001';
  /** The keys of unfinished runs, which nothing deletes (delete_runs deletes finished runs only): no lock. */
  private readonly copyUnfinished = `
      INSERT INTO idempotency_keys (workflow, idempotency_key, run_id)
      SELECT workflow, idempotency_key, id FROM runs WHERE idempotency_key IS NOT NULL AND status NOT IN ('completed', 'failed', 'cancelled')
      ON CONFLICT DO NOTHING`;
  /** The keys of finished runs, each locked against retention's delete. Public for test/migrations.e2e-spec.ts. */
  readonly copyFinished = `
      INSERT INTO idempotency_keys (workflow, idempotency_key, run_id)
      SELECT workflow, idempotency_key, id FROM runs WHERE idempotency_key IS NOT NULL AND status IN ('completed', 'failed', 'cancelled')
         FOR KEY SHARE
      ON CONFLICT DO NOTHING`;

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(this.copyUnfinished);
    await queryRunner.query(this.copyFinished);
  }

  async down(): Promise<void> {
    // Nothing to undo: the first migration's down drops the table.
  }
}

/** The foreign key validated (step 3 above): a scan of the keys against `runs`. */
export class IdempotencyKeysValidated1767100000002 implements MigrationInterface {
  name = 'IdempotencyKeysValidated1767100000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys VALIDATE CONSTRAINT idempotency_keys_run_id_fkey`);
  }

  async down(): Promise<void> {
    // Nothing to undo: the first migration's down drops the table.
  }
}
