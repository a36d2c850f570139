import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Flow control of workflow versions (docs/architecture.md, "Flow control"): pause and resume, concurrency
 * limits (per version and per `concurrency_key`) and a rate limit, all enforced by the claim statement.
 *
 * - `workflow_controls`: one row per workflow version that was ever paused or limited. Limits come from
 *   two sources, each in its own columns: the API (`api_*`, set by PUT /v1/workflows/:name/:version/limits)
 *   and the code (`code_*`, declared in defineWorkflow and registered by workers). The effective limit is
 *   the API's where it set one, else the code's (generated columns). The row also holds the rate limit's
 *   token bucket and when a wake-up for its next token is already on its way.
 * - `runs.concurrency_key`: runs with the same key share `concurrency_per_key` slots.
 * - `runs.holds_slot`: the run was taken while its version had a concurrency limit. Only such runs are
 *   counted (through `runs_slots_idx`, which unlimited runs never enter: their claims cost nothing more),
 *   and only their leaving `running` wakes the queue (`runs_slot_freed`), so a freed slot is used at once.
 */
/**
 * Admission: called by the claim statement with its queues and how many runs it wants of each.
 * For each queue whose version has an active control it locks the control row (in workflow,
 * version order: two claimers of overlapping versions cannot deadlock) and returns what may be
 * taken. VOLATILE on purpose: each query in it takes a fresh snapshot (READ COMMITTED), so the
 * slot counts, read after the lock was granted, include every run a claimer that held the lock
 * before took: two claimers cannot both take the last slot. The claim statement's own snapshot,
 * older, would miss them. The lock is held until the claim commits.
 */
const FLOW_ADMIT = `
      CREATE FUNCTION flow_admit(queues text[], wanted integer[])
      RETURNS TABLE (queue text, family text, fresh integer, takeovers boolean, family_cap integer, counts_slot boolean,
                     per_key integer, full_keys text[], key_names text[], key_running integer[],
                     rate double precision, tokens double precision, admitted_at timestamptz, rate_wakeup_at timestamptz)
      LANGUAGE plpgsql VOLATILE AS $$
      #variable_conflict use_column
      DECLARE
        c record;
        running integer;
        q record;
      BEGIN
        FOR c IN
          SELECT wc.* FROM workflow_controls wc
           WHERE wc.active AND (wc.workflow, wc.version) IN (SELECT split_part(u.q, ':', 1), split_part(u.q, ':', 2) FROM unnest(queues) AS u(q))
           ORDER BY wc.workflow, wc.version
           FOR UPDATE OF wc
        LOOP
          family := c.workflow || ':' || c.version;
          counts_slot := c.concurrency IS NOT NULL OR c.concurrency_per_key IS NOT NULL;
          per_key := c.concurrency_per_key;
          family_cap := NULL;
          IF c.concurrency IS NOT NULL THEN
            SELECT count(*) INTO running FROM runs r
             WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot;
            family_cap := greatest(c.concurrency - running, 0);
          END IF;
          full_keys := '{}';
          key_names := '{}';
          key_running := '{}';
          IF c.concurrency_per_key IS NOT NULL THEN
            SELECT coalesce(array_agg(k.key), '{}'), coalesce(array_agg(k.n), '{}'),
                   coalesce(array_agg(k.key) FILTER (WHERE k.n >= c.concurrency_per_key), '{}')
              INTO key_names, key_running, full_keys
              FROM (SELECT r.concurrency_key AS key, count(*)::integer AS n FROM runs r
                     WHERE r.workflow = c.workflow AND r.version = c.version AND r.status = 'running' AND r.holds_slot
                       AND r.concurrency_key IS NOT NULL
                     GROUP BY r.concurrency_key) k;
          END IF;
          rate := c.rate_per_second;
          admitted_at := clock_timestamp();
          rate_wakeup_at := c.rate_wakeup_at;
          tokens := NULL;
          IF rate IS NOT NULL THEN
            tokens := least(greatest(rate, 1),
                            coalesce(c.tokens, greatest(rate, 1)) + rate * greatest(extract(epoch FROM admitted_at - coalesce(c.refilled_at, admitted_at)), 0));
            family_cap := least(coalesce(family_cap, 2147483647), floor(tokens)::integer);
          END IF;
          FOR q IN SELECT x.queue, x.n FROM unnest(queues, wanted) AS x(queue, n)
                    WHERE split_part(x.queue, ':', 1) = c.workflow AND split_part(x.queue, ':', 2) = c.version
          LOOP
            queue := q.queue;
            takeovers := NOT (c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards));
            fresh := CASE WHEN takeovers THEN least(q.n, coalesce(family_cap, q.n)) ELSE 0 END;
            RETURN NEXT;
          END LOOP;
        END LOOP;
      END;
      $$`;

export class FlowControl1765300000000 implements MigrationInterface {
  name = 'FlowControl1765300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 255)`);
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN holds_slot boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`CREATE INDEX runs_slots_idx ON runs (workflow, version, concurrency_key) WHERE status = 'running' AND holds_slot`);

    await queryRunner.query(`
      CREATE TABLE workflow_controls (
        workflow                 text NOT NULL,
        version                  text NOT NULL,
        paused                   boolean NOT NULL DEFAULT false,
        -- Shards paused on their own (the whole version is paused by 'paused').
        paused_shards            text[] NOT NULL DEFAULT '{}',
        api_concurrency          integer CHECK (api_concurrency > 0),
        api_concurrency_per_key  integer CHECK (api_concurrency_per_key > 0),
        api_rate_per_second      double precision CHECK (api_rate_per_second > 0),
        code_concurrency         integer CHECK (code_concurrency > 0),
        code_concurrency_per_key integer CHECK (code_concurrency_per_key > 0),
        code_rate_per_second     double precision CHECK (code_rate_per_second > 0),
        concurrency              integer GENERATED ALWAYS AS (coalesce(api_concurrency, code_concurrency)) STORED,
        concurrency_per_key      integer GENERATED ALWAYS AS (coalesce(api_concurrency_per_key, code_concurrency_per_key)) STORED,
        rate_per_second          double precision GENERATED ALWAYS AS (coalesce(api_rate_per_second, code_rate_per_second)) STORED,
        -- The claim statement looks at this row only when it is active.
        active                   boolean GENERATED ALWAYS AS (
                                   paused OR cardinality(paused_shards) > 0
                                   OR coalesce(api_concurrency, code_concurrency, api_concurrency_per_key, code_concurrency_per_key) IS NOT NULL
                                   OR coalesce(api_rate_per_second, code_rate_per_second) IS NOT NULL) STORED,
        -- The token bucket (capacity: one second's worth, at least 1): tokens as of refilled_at.
        tokens                   double precision,
        refilled_at              timestamptz,
        -- A wake-up for the next token is scheduled for this time (no second one is needed before it).
        rate_wakeup_at           timestamptz,
        updated_at               timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workflow, version)
      )`);

    await queryRunner.query(FLOW_ADMIT);

    // A run that held a slot left 'running' (finished, failed, cancelled, suspended, released, stalled):
    // one run of the version may start now. Wake the queue whose best run waits longest among the run's
    // own queue and the version's other shards that live workers serve (the worker registry), unless
    // paused: by NOTIFY for claim long-polls and, when a publisher is configured, an outbox wake-up
    // (Redis workers drop the wake-ups of a full queue rather than circling them, so the freed slot
    // needs a new one). Committed with the change that freed the slot.
    await queryRunner.query(`
      CREATE FUNCTION runs_slot_freed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        best record;
      BEGIN
        SELECT q.queue, h.id INTO best
          FROM (SELECT NEW.queue AS queue
                UNION
                SELECT NEW.workflow || ':' || NEW.version || coalesce(':' || s.shard, '')
                  FROM workers wk
                 CROSS JOIN jsonb_array_elements(wk.workflows) w
                  LEFT JOIN LATERAL jsonb_array_elements_text(w->'shards') s(shard) ON true
                 WHERE wk.expires_at > now() AND w->>'name' = NEW.workflow AND w->>'version' = NEW.version) q
         CROSS JOIN LATERAL (
               SELECT r.id, r.priority, r.due_at FROM runs r
                WHERE r.queue = q.queue AND r.status IN ('queued', 'waiting') AND r.due_at <= now()
                ORDER BY r.priority DESC, r.due_at LIMIT 1) h
         WHERE NOT EXISTS (SELECT 1 FROM workflow_controls c
                            WHERE c.workflow = NEW.workflow AND c.version = NEW.version
                              AND (c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)))
         ORDER BY h.priority DESC, h.due_at
         LIMIT 1;
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_runs_ready', best.queue);
        IF coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none') THEN
          INSERT INTO outbox (run_id, queue) VALUES (best.id, best.queue);
        END IF;
        RETURN NULL;
      END;
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER runs_slot_freed AFTER UPDATE OF status ON runs FOR EACH ROW
        WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND OLD.holds_slot)
        EXECUTE FUNCTION runs_slot_freed()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER runs_slot_freed ON runs`);
    await queryRunner.query(`DROP FUNCTION runs_slot_freed()`);
    await queryRunner.query(`DROP FUNCTION flow_admit(text[], integer[])`);
    await queryRunner.query(`DROP TABLE workflow_controls`);
    await queryRunner.query(`DROP INDEX runs_slots_idx`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN holds_slot`);
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN concurrency_key`);
  }
}
