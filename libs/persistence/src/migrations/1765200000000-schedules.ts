import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Schedules (apps/coordinator/src/schedules): what to start when, and the next fire time each one is
 * at. A schedule fires by locking its row and advancing `next_run_at` in the transaction that inserts
 * its run, so it fires once however many coordinators hold its timer.
 *
 * A row trigger announces every new `next_run_at` on the due timers' channel (`wf_runs_due`, payload
 * `<due ms> <schedule id> ~schedule`: no run's queue can be `~schedule`), also one already past (a
 * catch-up that continues), so each coordinator's timer acts at the fire time rather than on a poll.
 */
export class Schedules1765200000000 implements MigrationInterface {
  name = 'Schedules1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE schedules (
        id uuid PRIMARY KEY,
        workflow text NOT NULL,
        version text NOT NULL,
        -- Set for a schedule declared in code (defineWorkflow({ schedules })): its name there.
        name text,
        cron text,
        interval_ms bigint,
        timezone text,
        input jsonb,
        shard text,
        priority integer NOT NULL DEFAULT 0,
        overlap text NOT NULL CHECK (overlap IN ('skip', 'allow', 'cancel-previous')),
        catch_up text NOT NULL CHECK (catch_up IN ('none', 'latest', 'all')),
        paused boolean NOT NULL DEFAULT false,
        -- The first fire time not yet acted on; null while paused.
        next_run_at timestamptz,
        last_fired_at timestamptz,
        last_run_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((cron IS NULL) <> (interval_ms IS NULL)),
        CHECK (paused = (next_run_at IS NULL))
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX schedules_declared_idx ON schedules (workflow, version, name) WHERE name IS NOT NULL`);
    // The due timers' load: schedules that fire within the horizon (or are overdue), soonest first.
    await queryRunner.query(`CREATE INDEX schedules_next_run_idx ON schedules (next_run_at) WHERE next_run_at IS NOT NULL`);
    await queryRunner.query(`
      CREATE FUNCTION schedules_notify_due() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('wf_runs_due', (extract(epoch FROM NEW.next_run_at) * 1000)::text || ' ' || NEW.id || ' ~schedule');
        RETURN NULL;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER schedules_notify_due_on_insert AFTER INSERT ON schedules FOR EACH ROW
        WHEN (NEW.next_run_at IS NOT NULL)
        EXECUTE FUNCTION schedules_notify_due()`);
    await queryRunner.query(`
      CREATE TRIGGER schedules_notify_due_on_update AFTER UPDATE OF next_run_at ON schedules FOR EACH ROW
        WHEN (NEW.next_run_at IS NOT NULL AND OLD.next_run_at IS DISTINCT FROM NEW.next_run_at)
        EXECUTE FUNCTION schedules_notify_due()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE schedules`);
    await queryRunner.query(`DROP FUNCTION schedules_notify_due()`);
  }
}
