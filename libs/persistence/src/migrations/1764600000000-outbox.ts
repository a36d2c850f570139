import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The outbox's NOTIFY trigger function. */
const OUTBOX_NOTIFY = `
      CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('wf_outbox', '');
        RETURN NULL;
      END;
      $$`;

/**
 * The transactional outbox. A row-level trigger on `runs` writes an outbox row whenever a run
 * becomes ready or gets a new due time, in the same transaction as that change, so no code path can
 * make a run ready without announcing it. It is active only on connections whose `wf.dispatch`
 * setting names a publisher (the coordinator sets it from DISPATCH); with DISPATCH=none nothing is
 * written and workers rely on the claim API.
 */
export class Outbox1764600000000 implements MigrationInterface {
  name = 'Outbox1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE outbox (
        id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id          uuid NOT NULL,
        queue           text NOT NULL,
        payload         jsonb NOT NULL,
        status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retry', 'in_flight', 'sent')),
        attempt_count   integer NOT NULL DEFAULT 0,
        -- Not published before this: the run's due time, or the next retry.
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error      text,
        created_at      timestamptz NOT NULL DEFAULT now(),
        updated_at      timestamptz NOT NULL DEFAULT now(),
        sent_at         timestamptz
      )`);
    // The enqueuer's batch query: due pending/retry rows, oldest due first.
    await queryRunner.query(`CREATE INDEX outbox_due_idx ON outbox (next_attempt_at) WHERE status IN ('pending', 'retry')`);
    await queryRunner.query(`CREATE INDEX outbox_in_flight_idx ON outbox (updated_at) WHERE status = 'in_flight'`);
    await queryRunner.query(`CREATE INDEX outbox_sent_idx ON outbox (sent_at) WHERE status = 'sent'`);
    await queryRunner.query(`CREATE INDEX outbox_run_idx ON outbox (run_id)`);

    await queryRunner.query(`
      CREATE TABLE outbox_dead_letters (
        id            bigint PRIMARY KEY,
        run_id        uuid NOT NULL,
        queue         text NOT NULL,
        payload       jsonb NOT NULL,
        attempt_count integer NOT NULL,
        last_error    text,
        created_at    timestamptz NOT NULL,
        dead_at       timestamptz NOT NULL DEFAULT now()
      )`);

    // Wake enqueuers (LISTEN wf_outbox) when a transaction that wrote outbox rows commits. Statement
    // level, and PostgreSQL folds identical notifications within a transaction: one per commit.
    await queryRunner.query(OUTBOX_NOTIFY);
    await queryRunner.query(`CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()`);

    // The message a worker gets: self-contained (input included up to 8 KiB; larger inputs come with the take).
    await queryRunner.query(`
      CREATE FUNCTION outbox_message(r runs) RETURNS jsonb LANGUAGE sql STABLE AS $$
        SELECT jsonb_build_object(
          'runId', r.id, 'workflow', r.workflow, 'version', r.version, 'queue', r.queue,
          'revision', r.revision, 'attempt', r.attempt, 'priority', r.priority,
          'dueAt', floor(extract(epoch FROM r.due_at) * 1000),
          'input', CASE WHEN pg_column_size(r.input) <= 8192 THEN r.input END,
          'inputIncluded', r.input IS NULL OR pg_column_size(r.input) <= 8192)
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION runs_enqueue_ready() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF coalesce(current_setting('wf.dispatch', true), 'none') IN ('', 'none') THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbox (run_id, queue, payload, next_attempt_at)
        VALUES (NEW.id, NEW.queue, outbox_message(NEW), greatest(NEW.due_at, now()));
        RETURN NULL;
      END;
      $$`);
    // A run becomes deliverable when it is inserted, or when it is (re)queued or gets a new due time.
    await queryRunner.query(`
      CREATE TRIGGER runs_enqueue_on_insert AFTER INSERT ON runs FOR EACH ROW
        WHEN (NEW.status IN ('queued', 'waiting') AND NEW.due_at <> 'infinity')
        EXECUTE FUNCTION runs_enqueue_ready()`);
    await queryRunner.query(`
      CREATE TRIGGER runs_enqueue_on_update AFTER UPDATE OF status, due_at ON runs FOR EACH ROW
        WHEN (NEW.status IN ('queued', 'waiting') AND NEW.due_at <> 'infinity'
              AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.due_at IS DISTINCT FROM NEW.due_at))
        EXECUTE FUNCTION runs_enqueue_ready()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER runs_enqueue_on_update ON runs`);
    await queryRunner.query(`DROP TRIGGER runs_enqueue_on_insert ON runs`);
    await queryRunner.query(`DROP FUNCTION runs_enqueue_ready()`);
    await queryRunner.query(`DROP FUNCTION outbox_message(runs)`);
    await queryRunner.query(`DROP TABLE outbox_dead_letters`);
    await queryRunner.query(`DROP TABLE outbox`);
    await queryRunner.query(`DROP FUNCTION outbox_notify()`);
  }
}
