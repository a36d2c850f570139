import type { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1764500000000 implements MigrationInterface {
  name = 'InitialSchema1764500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE runs (
        id              uuid PRIMARY KEY,
        workflow        text NOT NULL CHECK (length(workflow) BETWEEN 1 AND 128),
        version         text NOT NULL CHECK (length(version) BETWEEN 1 AND 128),
        queue           text NOT NULL,
        status          text NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'completed', 'failed', 'cancelled')),
        revision        integer NOT NULL DEFAULT 0,
        attempt         integer NOT NULL DEFAULT 1,
        parent_id       uuid REFERENCES runs (id) ON DELETE SET NULL,
        priority        integer NOT NULL DEFAULT 0,
        input           jsonb,
        output          jsonb,
        error           jsonb,
        idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
        -- When a queued or waiting run may be claimed; 'infinity' while it waits for an event or a child.
        due_at          timestamptz NOT NULL DEFAULT now(),
        claimed_by      text,
        heartbeat_at    timestamptz,
        created_at      timestamptz NOT NULL DEFAULT now(),
        updated_at      timestamptz NOT NULL DEFAULT now(),
        started_at      timestamptz,
        finished_at     timestamptz
      )`);
    // The claim query: due runs of one queue, highest priority first, oldest due first.
    await queryRunner.query(`CREATE INDEX runs_ready_idx ON runs (queue, priority DESC, due_at) WHERE status IN ('queued', 'waiting')`);
    // Work stealing: running runs whose claim has gone idle.
    await queryRunner.query(`CREATE INDEX runs_running_heartbeat_idx ON runs (heartbeat_at) WHERE status = 'running'`);
    await queryRunner.query(`CREATE UNIQUE INDEX runs_idempotency_key_idx ON runs (workflow, idempotency_key) WHERE idempotency_key IS NOT NULL`);
    // Listing newest first (ids are time-ordered UUIDv7), optionally by workflow.
    await queryRunner.query(`CREATE INDEX runs_workflow_id_idx ON runs (workflow, id DESC)`);
    await queryRunner.query(`CREATE INDEX runs_parent_idx ON runs (parent_id) WHERE parent_id IS NOT NULL`);

    await queryRunner.query(`
      CREATE TABLE tasks (
        run_id     uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key        text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
        -- A step of the run: a task, or a point where it suspended (sleep, event, child, retry wait).
        kind       text NOT NULL DEFAULT 'task' CHECK (kind IN ('task', 'sleep', 'event', 'child', 'retry')),
        -- Call order in the workflow (replay checks it to detect changed workflow code).
        seq        integer NOT NULL,
        name       text NOT NULL,
        status     text NOT NULL CHECK (status IN ('completed', 'failed', 'waiting')),
        attempts   integer NOT NULL,
        output     jsonb,
        error      jsonb,
        wake_at    timestamptz,
        child_id   uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, key)
      )`);

    await queryRunner.query(`
      CREATE TABLE run_transitions (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id      uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        from_status text,
        to_status   text NOT NULL,
        revision    integer NOT NULL,
        worker_id   text,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX run_transitions_run_idx ON run_transitions (run_id, id)`);

    // Events sent to a run; kept until a waitForEvent of that name consumes them.
    await queryRunner.query(`
      CREATE TABLE run_events (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id      uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
        data        jsonb,
        consumed_by text,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX run_events_pending_idx ON run_events (run_id, name, id) WHERE consumed_by IS NULL`);
    await queryRunner.query(`
      CREATE FUNCTION run_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'run_transitions is append-only';
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER run_transitions_no_update BEFORE UPDATE ON run_transitions
        FOR EACH STATEMENT EXECUTE FUNCTION run_transitions_append_only()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE run_events`);
    await queryRunner.query(`DROP TABLE run_transitions`);
    await queryRunner.query(`DROP FUNCTION run_transitions_append_only()`);
    await queryRunner.query(`DROP TABLE tasks`);
    await queryRunner.query(`DROP TABLE runs`);
  }
}
