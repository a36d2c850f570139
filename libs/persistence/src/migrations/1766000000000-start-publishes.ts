import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The functions as this migration leaves them, and as it found them (put back on the way down), written out
 * whole, as every migration's SQL is (they were once made by editing the outbox and dispatch-wakeups
 * migrations' texts). `wf.start_outbox` on: the transaction's start statement wrote its runs' outbox rows itself.
 */

/** runs_enqueue_ready, skipping runs whose start wrote their outbox rows. */
const ENQUEUE_READY_SKIPPING = `
      CREATE OR REPLACE FUNCTION runs_enqueue_ready() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF coalesce(current_setting('wf.dispatch', true), 'none') IN ('', 'none') OR current_setting('wf.start_outbox', true) = 'on' THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES (NEW.id, NEW.queue, greatest(NEW.due_at, now()));
        RETURN NULL;
      END;
      $$`;

/** outbox_notify, quiet for such rows and for an insert of none. */
const OUTBOX_NOTIFY_QUIET = `
      CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('wf.start_outbox', true) = 'on' OR NOT EXISTS (SELECT 1 FROM inserted_rows) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_outbox', '');
        RETURN NULL;
      END;
      $$`;

/** runs_enqueue_ready as the dispatch-wakeups migration made it. */
const ENQUEUE_READY = `
      CREATE OR REPLACE FUNCTION runs_enqueue_ready() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF coalesce(current_setting('wf.dispatch', true), 'none') IN ('', 'none') THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES (NEW.id, NEW.queue, greatest(NEW.due_at, now()));
        RETURN NULL;
      END;
      $$`;

/** outbox_notify as the outbox migration made it. */
const OUTBOX_NOTIFY = `
      CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('wf_outbox', '');
        RETURN NULL;
      END;
      $$`;

/**
 * A start publishes its own wake-ups (RunControlRepository.start with `publish`): the start statement writes
 * the outbox rows of the runs it inserts itself, those due now already `in_flight` (taken, as the enqueuer's
 * batch statement would mark them), returns their ids, and the coordinator that committed it publishes them
 * at once, without the enqueuer's NOTIFY and batch statement in between (about 1 ms of every start in the
 * Redis modes). It sets `wf.start_outbox` for its transaction (the statement is the whole transaction), so
 * the enqueue trigger does not write a second row for those runs, and outbox_notify wakes no enqueuer for
 * rows it has nothing to do with (the rows due later are announced by the due timers, as any). A
 * coordinator that dies between the commit and the publish leaves its rows `in_flight`: the enqueuers'
 * maintenance returns them to retry after OUTBOX_STALE_IN_FLIGHT_MS, as a batch of a dead enqueuer's.
 *
 * outbox_notify also stays quiet for an insert of no rows (it reads the statement's new rows, a transition
 * table): a statement-level trigger fires for those too, and the claim statement's rate wake-up CTE, an
 * INSERT that writes a row only when a rate limit ran out, woke every enqueuer for nothing at each commit.
 */
export class StartPublishes1766000000000 implements MigrationInterface {
  name = 'StartPublishes1766000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE_READY_SKIPPING);
    await queryRunner.query(OUTBOX_NOTIFY_QUIET);
    await queryRunner.query(`DROP TRIGGER outbox_notify ON outbox`);
    await queryRunner.query(
      `CREATE TRIGGER outbox_notify AFTER INSERT ON outbox REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE_READY);
    await queryRunner.query(`DROP TRIGGER outbox_notify ON outbox`);
    await queryRunner.query(OUTBOX_NOTIFY);
    await queryRunner.query(`CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()`);
  }
}
