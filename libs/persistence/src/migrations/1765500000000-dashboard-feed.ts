import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What operators' views read (GET /v1/stats, /v1/runs/{id}/transitions, /v1/feed; docs/architecture.md,
 * "Operators' views"):
 * - `wf_run_changes`: one NOTIFY per statement that appends to the run history (not one per row), from a
 *   statement-level trigger reading the rows it added as a transition table. The payload is a JSON array of
 *   `[id, workflow, version, status, revision, epoch ms]`, split into several notifications where a large
 *   batch would pass PostgreSQL's 8000-byte cap (chunks of at most 7000 bytes plus one entry, each entry under
 *   600 bytes since identifiers are at most 128 characters). Every coordinator LISTENs, so a change committed
 *   through one reaches the feeds of all.
 * - `feed_watchers`: the coordinators that have a feed open, each until its row expires. The trigger notifies
 *   only while one has: PostgreSQL serialises the commits of notifying transactions, which halved the rate of
 *   concurrent history-appending commits (docs/benchmarks.md), a price worth paying only while someone watches.
 * - `tasks.finished_at`: when a suspension step (sleep, event, child, retry wait) resolved, set by a row
 *   trigger whenever a step leaves `waiting`, whichever statement resolves it. `tasks.started_at`: when a task
 *   began, from the duration the worker measured and sent with its result (null from workers that send none).
 * - `runs_finished_at_idx`: runs that ended, by when, whatever their workflow (the throughput of the last hour
 *   or day; retention's `runs_finished_idx` leads with the workflow version, so a range of times over all of
 *   them cannot use it); partial, so a run enters it only once it ends.
 * - `runs_unsuccessful_idx`: failed and cancelled runs, newest first (GET /v1/runs?status=failed, with or
 *   without a workflow): without it a filter that matches few runs walks the whole history backwards
 *   (211 ms over a million runs for a workflow with no failures). Only runs that ended so enter it.
 */
export class DashboardFeed1765500000000 implements MigrationInterface {
  name = 'DashboardFeed1765500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE feed_watchers (
        coordinator text PRIMARY KEY,
        expires_at  timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE FUNCTION run_transitions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM feed_watchers WHERE expires_at > now()) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_run_changes', '[' || string_agg(entry, ',' ORDER BY n) || ']')
           FROM (SELECT entry, n, sum(octet_length(entry) + 1) OVER (ORDER BY n) AS upto
                   FROM (SELECT json_build_array(a.run_id, r.workflow, r.version, a.to_status, a.revision,
                                                 floor(extract(epoch FROM a.created_at) * 1000))::text AS entry,
                                a.id AS n
                           FROM added a JOIN runs r ON r.id = a.run_id) e) s
          GROUP BY (upto - 1) / 7000
          ORDER BY (upto - 1) / 7000;
        RETURN NULL;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER run_transitions_notify AFTER INSERT ON run_transitions
        REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION run_transitions_notify()`);

    await queryRunner.query(`ALTER TABLE tasks ADD COLUMN finished_at timestamptz, ADD COLUMN started_at timestamptz`);
    await queryRunner.query(`
      CREATE FUNCTION tasks_resolved_at() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.finished_at := now();
        RETURN NEW;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER tasks_resolved_at BEFORE UPDATE OF status ON tasks FOR EACH ROW
        WHEN (OLD.status = 'waiting' AND NEW.status <> 'waiting')
        EXECUTE FUNCTION tasks_resolved_at()`);

    await queryRunner.query(`CREATE INDEX runs_finished_at_idx ON runs (finished_at) WHERE finished_at IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX runs_unsuccessful_idx ON runs (id) WHERE status IN ('failed', 'cancelled')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX runs_unsuccessful_idx`);
    await queryRunner.query(`DROP INDEX runs_finished_at_idx`);
    await queryRunner.query(`DROP TRIGGER tasks_resolved_at ON tasks`);
    await queryRunner.query(`DROP FUNCTION tasks_resolved_at()`);
    await queryRunner.query(`ALTER TABLE tasks DROP COLUMN finished_at, DROP COLUMN started_at`);
    await queryRunner.query(`DROP TRIGGER run_transitions_notify ON run_transitions`);
    await queryRunner.query(`DROP FUNCTION run_transitions_notify()`);
    await queryRunner.query(`DROP TABLE feed_watchers`);
  }
}
