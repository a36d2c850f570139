import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the coordinators' due timers need (apps/coordinator/src/timers): an index to load the
 * upcoming due times in order, and a NOTIFY whenever a run gets a future due time. A row trigger
 * covers every code path that schedules a run (start with runAt, sleep, event or child wait with a
 * timeout, task retry wait, workflow-level retry), present and future.
 */
export class DueTimers1764800000000 implements MigrationInterface {
  name = 'DueTimers1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The timers' load: queued or waiting runs due within the horizon, soonest first. Runs that only
    // an event or a child can wake (due 'infinity') stay out, however many there are.
    await queryRunner.query(`CREATE INDEX runs_due_idx ON runs (due_at) WHERE status IN ('queued', 'waiting') AND due_at <> 'infinity'`);

    // Payload: "<due, epoch ms with microseconds> <run id> <queue>", under 400 bytes. The run id also
    // keeps PostgreSQL from folding the identical notifications of one transaction (a batch of runs
    // with one runAt) into one, so the timers know how many runs come due.
    await queryRunner.query(`
      CREATE FUNCTION runs_notify_due() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('wf_runs_due', (extract(epoch FROM NEW.due_at) * 1000)::text || ' ' || NEW.id || ' ' || NEW.queue);
        RETURN NULL;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER runs_notify_due_on_insert AFTER INSERT ON runs FOR EACH ROW
        WHEN (NEW.status IN ('queued', 'waiting') AND NEW.due_at > now() AND NEW.due_at <> 'infinity')
        EXECUTE FUNCTION runs_notify_due()`);
    await queryRunner.query(`
      CREATE TRIGGER runs_notify_due_on_update AFTER UPDATE OF status, due_at ON runs FOR EACH ROW
        WHEN (NEW.status IN ('queued', 'waiting') AND NEW.due_at > now() AND NEW.due_at <> 'infinity'
              AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.due_at IS DISTINCT FROM NEW.due_at))
        EXECUTE FUNCTION runs_notify_due()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER runs_notify_due_on_update ON runs`);
    await queryRunner.query(`DROP TRIGGER runs_notify_due_on_insert ON runs`);
    await queryRunner.query(`DROP FUNCTION runs_notify_due()`);
    await queryRunner.query(`DROP INDEX runs_due_idx`);
  }
}
