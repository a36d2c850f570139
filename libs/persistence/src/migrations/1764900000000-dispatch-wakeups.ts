import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The enqueue trigger's function: an outbox row per run that became ready, without a message body. */
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

/**
 * Redis carries wake-ups, PostgreSQL decides (docs/architecture.md, "Dispatch"):
 * - an outbox row is a wake-up for its queue: it no longer carries a message body (the take picks the
 *   queue's best runs, as a claim does), only the run it was written for;
 * - `runs.stalls` counts takeovers of a run whose claim went idle (the stall limit);
 * - `dead_letters` holds everything dispatch gave up on, whatever its origin (an outbox row out of
 *   publish attempts, a Streams message delivered too often), to list, redrive or delete;
 * - `engine_settings` holds deployment-wide facts every coordinator must agree on (the stream
 *   partition count).
 */
export class DispatchWakeups1764900000000 implements MigrationInterface {
  name = 'DispatchWakeups1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN stalls integer NOT NULL DEFAULT 0`);

    await queryRunner.query(`
      CREATE TABLE dead_letters (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        origin     text NOT NULL CHECK (origin IN ('outbox', 'stream')),
        -- What it was within its origin (the outbox row id; the stream and entry id): reporting one twice records it once.
        ref        text NOT NULL,
        -- The run it was about (a Streams wake-up that names none has none).
        run_id     uuid,
        queue      text NOT NULL,
        reason     text NOT NULL,
        message    text NOT NULL,
        detail     jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (origin, ref)
      )`);
    await queryRunner.query(`
      INSERT INTO dead_letters (origin, ref, run_id, queue, reason, message, detail, created_at)
      SELECT 'outbox', id::text, run_id, queue, 'publish_failed', coalesce(last_error, 'publishing failed'),
             jsonb_build_object('attempts', attempt_count), dead_at
        FROM outbox_dead_letters`);
    await queryRunner.query(`DROP TABLE outbox_dead_letters`);

    await queryRunner.query(`
      CREATE TABLE engine_settings (
        name       text PRIMARY KEY,
        value      jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);

    await queryRunner.query(`ALTER TABLE outbox DROP COLUMN payload`);
    await queryRunner.query(`DROP FUNCTION outbox_message(runs)`);
    await queryRunner.query(ENQUEUE_READY);
    // The republish daemon counts, per queue, the wake-ups still on their way to Redis.
    await queryRunner.query(`CREATE INDEX outbox_queue_idx ON outbox (queue) WHERE status IN ('pending', 'retry', 'in_flight')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX outbox_queue_idx`);
    await queryRunner.query(`ALTER TABLE outbox ADD COLUMN payload jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(`
      CREATE FUNCTION outbox_message(r runs) RETURNS jsonb LANGUAGE sql STABLE AS $$
        SELECT jsonb_build_object('runId', r.id, 'queue', r.queue)
      $$`);
    await queryRunner.query(`DROP TABLE engine_settings`);
    await queryRunner.query(`
      CREATE TABLE outbox_dead_letters (
        id bigint PRIMARY KEY, run_id uuid NOT NULL, queue text NOT NULL, payload jsonb NOT NULL,
        attempt_count integer NOT NULL, last_error text, created_at timestamptz NOT NULL,
        dead_at timestamptz NOT NULL DEFAULT now())`);
    await queryRunner.query(`DROP TABLE dead_letters`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN stalls`);
  }
}
