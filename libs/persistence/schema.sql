-- The schema as libs/persistence's migrations leave it: tables, indexes, constraints, triggers and functions
-- (and TypeORM's own `migrations` table). Made by `pg_dump --schema-only --no-owner --no-privileges` of a
-- freshly migrated database, without its SET lines, session settings and banner comments. For reading: a
-- database gets its schema from the migrations, never from this file. libs/persistence/src/schema/schema.spec.ts
-- migrates a fresh database and compares (comments and blank lines aside); after a migration, rewrite it with
-- `UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema`.

--
-- Name: delete_runs(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.delete_runs(ids uuid[]) RETURNS SETOF uuid
    LANGUAGE plpgsql
    AS $$
      DECLARE
        deleted uuid[];
      BEGIN
        PERFORM set_config('wf.deleting_runs', 'on', true);
        WITH gone AS (
          DELETE FROM runs WHERE id = ANY(ids) AND status IN ('completed', 'failed', 'cancelled') RETURNING id
        )
        SELECT coalesce(array_agg(id), '{}') INTO deleted FROM gone;
        DELETE FROM tasks WHERE run_id = ANY(deleted);
        DELETE FROM run_transitions WHERE run_id = ANY(deleted);
        DELETE FROM run_events WHERE run_id = ANY(deleted);
        DELETE FROM run_updates WHERE run_id = ANY(deleted);
        DELETE FROM run_values WHERE run_id = ANY(deleted);
        UPDATE runs SET parent_id = NULL WHERE parent_id = ANY(deleted);
        PERFORM set_config('wf.deleting_runs', 'off', true);
        RETURN QUERY SELECT unnest(deleted);
      END;
      $$;

--
-- Name: flow_admit(text[], integer[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flow_admit(queues text[], wanted integer[]) RETURNS TABLE(queue text, family text, fresh integer, takeovers boolean, family_cap integer, counts_slot boolean, per_key integer, full_keys text[], key_names text[], key_running integer[], rate double precision, tokens double precision, admitted_at timestamp with time zone, rate_wakeup_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
      #variable_conflict use_column
      DECLARE
        c record;
        running integer;
        q record;
      BEGIN
        -- Shared per version: claims do not wait for each other here, only for a limit being set.
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(v.workflow, v.version))
           FROM (SELECT DISTINCT split_part(u.q, ':', 1) AS workflow, split_part(u.q, ':', 2) AS version FROM unnest(queues) AS u(q)) v
          ORDER BY v.workflow, v.version;
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
      $$;

--
-- Name: flow_hand_off(text, text, text[], double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flow_hand_off(workflow text, version text, queues text[], idle_ms double precision) RETURNS boolean
    LANGUAGE plpgsql
    AS $_$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(flow_version_lock(workflow, version));
        RETURN NOT EXISTS (SELECT 1 FROM workflow_controls c WHERE c.active AND c.workflow = $1 AND c.version = $2)
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status IN ('queued', 'waiting') AND r.queue = ANY ($3) AND r.due_at <= now())
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.queue = ANY ($3) AND r.heartbeat_at < now() - $4 * interval '1 millisecond');
      END;
      $_$;

--
-- Name: flow_key_rate(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flow_key_rate(family text) RETURNS double precision
    LANGUAGE plpgsql
    AS $$
      BEGIN
        RETURN (SELECT c.rate_per_key_per_second FROM workflow_controls c
                 WHERE c.workflow = split_part(family, ':', 1) AND c.version = split_part(family, ':', 2));
      END;
      $$;

--
-- Name: flow_key_tokens(text, double precision, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flow_key_tokens(family text, rate double precision, keys text[]) RETURNS TABLE(key text, tokens double precision, delayed_until timestamp with time zone, admitted_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
      #variable_conflict use_column
      DECLARE
        fam_workflow text := split_part(family, ':', 1);
        fam_version text := split_part(family, ':', 2);
        capacity double precision := greatest(rate, 1);
        now_at timestamptz := clock_timestamp();
      BEGIN
        DELETE FROM workflow_key_buckets b
         WHERE b.ctid IN (SELECT x.ctid FROM workflow_key_buckets x
                           WHERE x.workflow = fam_workflow AND x.version = fam_version
                             AND x.refilled_at < now_at - capacity / rate * interval '1 second'
                             AND (x.delayed_until IS NULL OR x.delayed_until < now_at) AND x.key <> ALL (keys)
                           LIMIT 100);
        RETURN QUERY
          SELECT k.key, least(capacity, coalesce(b.tokens + rate * greatest(extract(epoch FROM now_at - b.refilled_at), 0), capacity)),
                 b.delayed_until, now_at
            FROM unnest(keys) AS k(key)
            LEFT JOIN LATERAL (SELECT x.tokens, x.refilled_at, x.delayed_until FROM workflow_key_buckets x
                                WHERE x.workflow = fam_workflow AND x.version = fam_version AND x.key = k.key
                                FOR UPDATE) b ON true
           ORDER BY k.key;
      END;
      $$;

--
-- Name: flow_version_lock(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flow_version_lock(workflow text, version text) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT hashtextextended('wf_flow:' || workflow || ':' || version, 0)
      $$;

--
-- Name: outbox_notify(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.outbox_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF current_setting('wf.start_outbox', true) = 'on' OR NOT EXISTS (SELECT 1 FROM inserted_rows) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_notify('wf_outbox', '');
        RETURN NULL;
      END;
      $$;

--
-- Name: run_transitions_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.run_transitions_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'run_transitions is append-only'
          USING HINT = 'history is removed only with its run, through delete_runs()';
      END;
      $$;

--
-- Name: run_transitions_notify(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.run_transitions_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
      $$;

--
-- Name: run_transitions_only_with_their_run(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.run_transitions_only_with_their_run() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id FROM removed) d JOIN runs r ON r.id = d.run_id) THEN
          RAISE EXCEPTION 'run_transitions is append-only'
            USING HINT = 'history is removed only with its run, through delete_runs()';
        END IF;
        RETURN NULL;
      END;
      $$;

--
-- Name: runs_claim_idempotency_key(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.runs_claim_idempotency_key() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        INSERT INTO idempotency_keys (workflow, idempotency_key, run_id) VALUES (NEW.workflow, NEW.idempotency_key, NEW.id)
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          RETURN NEW;
        END IF;
        -- The key is taken (by a run committed, or one whose transaction this insert waited for): no run.
        RETURN NULL;
      END;
      $$;

--
-- Name: runs_delete_guard(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.runs_delete_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF current_setting('wf.deleting_runs', true) = 'on' THEN
          RETURN NULL;
        END IF;
        RAISE EXCEPTION 'runs are deleted only through delete_runs()'
          USING HINT = 'SELECT delete_runs(ARRAY[...]::uuid[]) deletes finished runs with their history';
      END;
      $$;

--
-- Name: runs_enqueue_ready(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.runs_enqueue_ready() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF coalesce(current_setting('wf.dispatch', true), 'none') IN ('', 'none') OR current_setting('wf.start_outbox', true) = 'on' THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbox (run_id, queue, next_attempt_at) VALUES (NEW.id, NEW.queue, greatest(NEW.due_at, now()));
        RETURN NULL;
      END;
      $$;

--
-- Name: runs_notify_due(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.runs_notify_due() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        PERFORM pg_notify('wf_runs_due', (extract(epoch FROM NEW.due_at) * 1000)::text || ' ' || NEW.id || ' ' || NEW.queue);
        RETURN NULL;
      END;
      $$;

--
-- Name: runs_slot_freed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.runs_slot_freed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
      $$;

--
-- Name: schedules_notify_due(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.schedules_notify_due() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        PERFORM pg_notify('wf_runs_due', (extract(epoch FROM NEW.next_run_at) * 1000)::text || ' ' || NEW.id || ' ~schedule');
        RETURN NULL;
      END;
      $$;

--
-- Name: tasks_resolved_at(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tasks_resolved_at() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        NEW.finished_at := now();
        RETURN NEW;
      END;
      $$;

--
-- Name: completion_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.completion_tokens (
    token text NOT NULL,
    run_id uuid NOT NULL,
    wait_key text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    completed_at timestamp with time zone,
    outcome jsonb,
    CONSTRAINT completion_tokens_outcome_check CHECK (((completed_at IS NULL) = (outcome IS NULL)))
);

--
-- Name: dead_letters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letters (
    id bigint NOT NULL,
    origin text NOT NULL,
    ref text NOT NULL,
    run_id uuid,
    queue text NOT NULL,
    reason text NOT NULL,
    message text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT dead_letters_origin_check CHECK ((origin = ANY (ARRAY['outbox'::text, 'stream'::text])))
);

--
-- Name: dead_letters_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.dead_letters ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.dead_letters_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: engine_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.engine_settings (
    name text NOT NULL,
    value jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: feed_watchers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.feed_watchers (
    coordinator text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    workflow text NOT NULL,
    idempotency_key text NOT NULL,
    run_id uuid NOT NULL
);

--
-- Name: migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.migrations (
    id integer NOT NULL,
    "timestamp" bigint NOT NULL,
    name character varying NOT NULL
);

--
-- Name: migrations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.migrations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: migrations_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.migrations_id_seq OWNED BY public.migrations.id;

--
-- Name: outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    queue text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    CONSTRAINT outbox_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'retry'::text, 'in_flight'::text, 'sent'::text])))
);

--
-- Name: outbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.outbox ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: run_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run_events (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    name text NOT NULL,
    data jsonb,
    consumed_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT run_events_name_check CHECK (((length(name) >= 1) AND (length(name) <= 128)))
);

--
-- Name: run_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.run_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.run_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: run_transitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run_transitions (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    from_status text,
    to_status text NOT NULL,
    revision integer NOT NULL,
    worker_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: run_transitions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.run_transitions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.run_transitions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: run_updates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run_updates (
    id uuid NOT NULL,
    run_id uuid NOT NULL,
    "position" bigint NOT NULL,
    name text NOT NULL,
    input jsonb,
    status text DEFAULT 'pending'::text NOT NULL,
    output jsonb,
    error jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    answered_at timestamp with time zone,
    CONSTRAINT run_updates_name_check CHECK (((length(name) >= 1) AND (length(name) <= 128))),
    CONSTRAINT run_updates_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'completed'::text, 'failed'::text, 'refused'::text])))
);

--
-- Name: run_updates_position_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.run_updates ALTER COLUMN "position" ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.run_updates_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: run_values; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run_values (
    run_id uuid NOT NULL,
    name text NOT NULL,
    value jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT run_values_name_check CHECK (((length(name) >= 1) AND (length(name) <= 128)))
);

--
-- Name: runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.runs (
    id uuid NOT NULL,
    workflow text NOT NULL,
    version text NOT NULL,
    queue text NOT NULL,
    status text NOT NULL,
    revision integer DEFAULT 0 NOT NULL,
    attempt integer DEFAULT 1 NOT NULL,
    parent_id uuid,
    priority integer DEFAULT 0 NOT NULL,
    input jsonb,
    output jsonb,
    error jsonb,
    idempotency_key text,
    due_at timestamp with time zone DEFAULT now() NOT NULL,
    claimed_by text,
    heartbeat_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    shard text,
    stalls integer DEFAULT 0 NOT NULL,
    claimed_via text,
    concurrency_key text,
    holds_slot boolean DEFAULT false NOT NULL,
    tags jsonb DEFAULT '{}'::jsonb NOT NULL,
    rate_delayed boolean DEFAULT false NOT NULL,
    build_id text,
    progress jsonb,
    progress_at timestamp with time zone,
    traceparent text,
    tracestate text,
    CONSTRAINT runs_concurrency_key_check CHECK (((length(concurrency_key) >= 1) AND (length(concurrency_key) <= 255))),
    CONSTRAINT runs_idempotency_key_check CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255))),
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'waiting'::text, 'completed'::text, 'failed'::text, 'cancelled'::text]))),
    CONSTRAINT runs_version_check CHECK (((length(version) >= 1) AND (length(version) <= 128))),
    CONSTRAINT runs_workflow_check CHECK (((length(workflow) >= 1) AND (length(workflow) <= 128)))
);

--
-- Name: schedules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schedules (
    id uuid NOT NULL,
    workflow text NOT NULL,
    version text NOT NULL,
    name text,
    cron text,
    interval_ms bigint,
    timezone text,
    input jsonb,
    shard text,
    priority integer DEFAULT 0 NOT NULL,
    overlap text NOT NULL,
    catch_up text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    next_run_at timestamp with time zone,
    last_fired_at timestamp with time zone,
    last_run_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_catch_up_check CHECK ((catch_up = ANY (ARRAY['none'::text, 'latest'::text, 'all'::text]))),
    CONSTRAINT schedules_check CHECK (((cron IS NULL) <> (interval_ms IS NULL))),
    CONSTRAINT schedules_check1 CHECK ((paused = (next_run_at IS NULL))),
    CONSTRAINT schedules_overlap_check CHECK ((overlap = ANY (ARRAY['skip'::text, 'allow'::text, 'cancel-previous'::text])))
);

--
-- Name: tasks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tasks (
    run_id uuid NOT NULL,
    key text NOT NULL,
    kind text DEFAULT 'task'::text NOT NULL,
    seq integer NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    attempts integer NOT NULL,
    output jsonb,
    error jsonb,
    wake_at timestamp with time zone,
    child_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    started_at timestamp with time zone,
    attempt_times jsonb,
    CONSTRAINT tasks_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255))),
    CONSTRAINT tasks_kind_check CHECK ((kind = ANY (ARRAY['task'::text, 'sleep'::text, 'event'::text, 'child'::text, 'retry'::text, 'patch'::text, 'token'::text, 'external'::text, 'update'::text, 'group'::text]))),
    CONSTRAINT tasks_status_check CHECK ((status = ANY (ARRAY['completed'::text, 'failed'::text, 'waiting'::text])))
);

--
-- Name: workers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workers (
    id text NOT NULL,
    subscriber text NOT NULL,
    failed_over boolean NOT NULL,
    concurrency integer NOT NULL,
    runs_held integer NOT NULL,
    workflows jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    declared_schedules jsonb DEFAULT '[]'::jsonb NOT NULL,
    build_id text
);

--
-- Name: workflow_controls; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workflow_controls (
    workflow text NOT NULL,
    version text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    paused_shards text[] DEFAULT '{}'::text[] NOT NULL,
    api_concurrency integer,
    api_concurrency_per_key integer,
    api_rate_per_second double precision,
    code_concurrency integer,
    code_concurrency_per_key integer,
    code_rate_per_second double precision,
    concurrency integer GENERATED ALWAYS AS (COALESCE(api_concurrency, code_concurrency)) STORED,
    concurrency_per_key integer GENERATED ALWAYS AS (COALESCE(api_concurrency_per_key, code_concurrency_per_key)) STORED,
    rate_per_second double precision GENERATED ALWAYS AS (COALESCE(api_rate_per_second, code_rate_per_second)) STORED,
    tokens double precision,
    refilled_at timestamp with time zone,
    rate_wakeup_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    api_rate_per_key_per_second double precision,
    code_rate_per_key_per_second double precision,
    rate_per_key_per_second double precision GENERATED ALWAYS AS (COALESCE(api_rate_per_key_per_second, code_rate_per_key_per_second)) STORED,
    active boolean GENERATED ALWAYS AS ((paused OR (cardinality(paused_shards) > 0) OR (COALESCE(api_concurrency, code_concurrency, api_concurrency_per_key, code_concurrency_per_key) IS NOT NULL) OR (COALESCE(api_rate_per_second, code_rate_per_second, api_rate_per_key_per_second, code_rate_per_key_per_second) IS NOT NULL))) STORED,
    CONSTRAINT workflow_controls_api_concurrency_check CHECK ((api_concurrency > 0)),
    CONSTRAINT workflow_controls_api_concurrency_per_key_check CHECK ((api_concurrency_per_key > 0)),
    CONSTRAINT workflow_controls_api_rate_per_key_per_second_check CHECK ((api_rate_per_key_per_second > (0)::double precision)),
    CONSTRAINT workflow_controls_api_rate_per_second_check CHECK ((api_rate_per_second > (0)::double precision)),
    CONSTRAINT workflow_controls_code_concurrency_check CHECK ((code_concurrency > 0)),
    CONSTRAINT workflow_controls_code_concurrency_per_key_check CHECK ((code_concurrency_per_key > 0)),
    CONSTRAINT workflow_controls_code_rate_per_key_per_second_check CHECK ((code_rate_per_key_per_second > (0)::double precision)),
    CONSTRAINT workflow_controls_code_rate_per_second_check CHECK ((code_rate_per_second > (0)::double precision))
);

--
-- Name: workflow_key_buckets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workflow_key_buckets (
    workflow text NOT NULL,
    version text NOT NULL,
    key text NOT NULL,
    tokens double precision NOT NULL,
    refilled_at timestamp with time zone NOT NULL,
    delayed_until timestamp with time zone,
    CONSTRAINT workflow_key_buckets_tokens_check CHECK ((tokens >= (0)::double precision))
);

--
-- Name: workflows; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workflows (
    workflow text NOT NULL,
    version text NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    retention_ms bigint,
    input_schema jsonb,
    updates jsonb,
    CONSTRAINT workflows_retention_ms_check CHECK ((retention_ms >= 0))
);

--
-- Name: migrations id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.migrations ALTER COLUMN id SET DEFAULT nextval('public.migrations_id_seq'::regclass);

--
-- Name: migrations PK_8c82d7f526340ab734260ea46be; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.migrations
    ADD CONSTRAINT "PK_8c82d7f526340ab734260ea46be" PRIMARY KEY (id);

--
-- Name: completion_tokens completion_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.completion_tokens
    ADD CONSTRAINT completion_tokens_pkey PRIMARY KEY (token);

--
-- Name: completion_tokens completion_tokens_wait_unique; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.completion_tokens
    ADD CONSTRAINT completion_tokens_wait_unique UNIQUE (run_id, wait_key);

--
-- Name: dead_letters dead_letters_origin_ref_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_origin_ref_key UNIQUE (origin, ref);

--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);

--
-- Name: engine_settings engine_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.engine_settings
    ADD CONSTRAINT engine_settings_pkey PRIMARY KEY (name);

--
-- Name: feed_watchers feed_watchers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.feed_watchers
    ADD CONSTRAINT feed_watchers_pkey PRIMARY KEY (coordinator);

--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (workflow, idempotency_key);

--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

--
-- Name: run_events run_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_events
    ADD CONSTRAINT run_events_pkey PRIMARY KEY (run_id, id);

--
-- Name: run_transitions run_transitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_transitions
    ADD CONSTRAINT run_transitions_pkey PRIMARY KEY (run_id, id);

--
-- Name: run_updates run_updates_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_updates
    ADD CONSTRAINT run_updates_pkey PRIMARY KEY (run_id, id);

--
-- Name: run_values run_values_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_values
    ADD CONSTRAINT run_values_pkey PRIMARY KEY (run_id, name);

--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

--
-- Name: schedules schedules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);

--
-- Name: tasks tasks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (run_id, key);

--
-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);

--
-- Name: workflow_controls workflow_controls_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workflow_controls
    ADD CONSTRAINT workflow_controls_pkey PRIMARY KEY (workflow, version);

--
-- Name: workflow_key_buckets workflow_key_buckets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workflow_key_buckets
    ADD CONSTRAINT workflow_key_buckets_pkey PRIMARY KEY (workflow, version, key);

--
-- Name: workflows workflows_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workflows
    ADD CONSTRAINT workflows_pkey PRIMARY KEY (workflow, version);

--
-- Name: dead_letters_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_created_idx ON public.dead_letters USING btree (created_at);

--
-- Name: idempotency_keys_run_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_run_idx ON public.idempotency_keys USING btree (run_id);

--
-- Name: outbox_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_due_idx ON public.outbox USING btree (next_attempt_at) WHERE (status = ANY (ARRAY['pending'::text, 'retry'::text]));

--
-- Name: outbox_in_flight_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_in_flight_idx ON public.outbox USING btree (updated_at) WHERE (status = 'in_flight'::text);

--
-- Name: outbox_queue_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_queue_idx ON public.outbox USING btree (queue) WHERE (status = ANY (ARRAY['pending'::text, 'retry'::text, 'in_flight'::text]));

--
-- Name: outbox_run_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_run_idx ON public.outbox USING btree (run_id);

--
-- Name: outbox_sent_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_sent_idx ON public.outbox USING btree (sent_at) WHERE (status = 'sent'::text);

--
-- Name: run_events_pending_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX run_events_pending_idx ON public.run_events USING btree (run_id, name, id) WHERE (consumed_by IS NULL);

--
-- Name: run_updates_pending_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX run_updates_pending_idx ON public.run_updates USING btree (run_id, "position") WHERE (status = 'pending'::text);

--
-- Name: runs_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_due_idx ON public.runs USING btree (due_at) WHERE ((status = ANY (ARRAY['queued'::text, 'waiting'::text])) AND (due_at <> 'infinity'::timestamp with time zone));

--
-- Name: runs_finished_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_finished_at_idx ON public.runs USING btree (finished_at) WHERE (finished_at IS NOT NULL);

--
-- Name: runs_finished_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_finished_idx ON public.runs USING btree (workflow, version, finished_at) WHERE (status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text]));

--
-- Name: runs_idle_claims_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_idle_claims_idx ON public.runs USING btree (queue, heartbeat_at) WHERE (status = 'running'::text);

--
-- Name: runs_parent_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_parent_idx ON public.runs USING btree (parent_id) WHERE (parent_id IS NOT NULL);

--
-- Name: runs_ready_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_ready_idx ON public.runs USING btree (queue, priority DESC, due_at) WHERE (status = ANY (ARRAY['queued'::text, 'waiting'::text]));

--
-- Name: runs_slots_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_slots_idx ON public.runs USING btree (workflow, version, concurrency_key) WHERE ((status = 'running'::text) AND holds_slot);

--
-- Name: runs_tags_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_tags_idx ON public.runs USING gin (tags jsonb_path_ops) WHERE (tags <> '{}'::jsonb);

--
-- Name: runs_unsuccessful_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_unsuccessful_idx ON public.runs USING btree (id) WHERE (status = ANY (ARRAY['failed'::text, 'cancelled'::text]));

--
-- Name: runs_workflow_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX runs_workflow_id_idx ON public.runs USING btree (workflow, id DESC);

--
-- Name: schedules_declared_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX schedules_declared_idx ON public.schedules USING btree (workflow, version, name) WHERE (name IS NOT NULL);

--
-- Name: schedules_next_run_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX schedules_next_run_idx ON public.schedules USING btree (next_run_at) WHERE (next_run_at IS NOT NULL);

--
-- Name: workflow_key_buckets_refilled_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX workflow_key_buckets_refilled_idx ON public.workflow_key_buckets USING btree (workflow, version, refilled_at);

--
-- Name: outbox outbox_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER outbox_notify AFTER INSERT ON public.outbox REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION public.outbox_notify();

--
-- Name: run_transitions run_transitions_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER run_transitions_append_only BEFORE DELETE OR UPDATE ON public.run_transitions FOR EACH STATEMENT EXECUTE FUNCTION public.run_transitions_append_only();

--
-- Name: run_transitions run_transitions_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER run_transitions_notify AFTER INSERT ON public.run_transitions REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.run_transitions_notify();

--
-- Name: run_transitions run_transitions_only_with_their_run; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER run_transitions_only_with_their_run AFTER DELETE ON public.run_transitions REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION public.run_transitions_only_with_their_run();

--
-- Name: runs runs_claim_idempotency_key; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_claim_idempotency_key BEFORE INSERT ON public.runs FOR EACH ROW WHEN ((new.idempotency_key IS NOT NULL)) EXECUTE FUNCTION public.runs_claim_idempotency_key();

--
-- Name: runs runs_delete_guard; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_delete_guard BEFORE DELETE ON public.runs FOR EACH STATEMENT EXECUTE FUNCTION public.runs_delete_guard();

--
-- Name: runs runs_enqueue_on_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_enqueue_on_insert AFTER INSERT ON public.runs FOR EACH ROW WHEN (((new.status = ANY (ARRAY['queued'::text, 'waiting'::text])) AND (new.due_at <> 'infinity'::timestamp with time zone))) EXECUTE FUNCTION public.runs_enqueue_ready();

--
-- Name: runs runs_enqueue_on_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_enqueue_on_update AFTER UPDATE OF status, due_at ON public.runs FOR EACH ROW WHEN (((new.status = ANY (ARRAY['queued'::text, 'waiting'::text])) AND (new.due_at <> 'infinity'::timestamp with time zone) AND ((old.status IS DISTINCT FROM new.status) OR (old.due_at IS DISTINCT FROM new.due_at)))) EXECUTE FUNCTION public.runs_enqueue_ready();

--
-- Name: runs runs_notify_due_on_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_notify_due_on_insert AFTER INSERT ON public.runs FOR EACH ROW WHEN (((new.status = ANY (ARRAY['queued'::text, 'waiting'::text])) AND (new.due_at > now()) AND (new.due_at <> 'infinity'::timestamp with time zone))) EXECUTE FUNCTION public.runs_notify_due();

--
-- Name: runs runs_notify_due_on_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_notify_due_on_update AFTER UPDATE OF status, due_at ON public.runs FOR EACH ROW WHEN (((new.status = ANY (ARRAY['queued'::text, 'waiting'::text])) AND (new.due_at > now()) AND (new.due_at <> 'infinity'::timestamp with time zone) AND ((old.status IS DISTINCT FROM new.status) OR (old.due_at IS DISTINCT FROM new.due_at)))) EXECUTE FUNCTION public.runs_notify_due();

--
-- Name: runs runs_slot_freed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER runs_slot_freed AFTER UPDATE OF status ON public.runs FOR EACH ROW WHEN (((old.status = 'running'::text) AND (new.status <> 'running'::text) AND old.holds_slot)) EXECUTE FUNCTION public.runs_slot_freed();

--
-- Name: schedules schedules_notify_due_on_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER schedules_notify_due_on_insert AFTER INSERT ON public.schedules FOR EACH ROW WHEN ((new.next_run_at IS NOT NULL)) EXECUTE FUNCTION public.schedules_notify_due();

--
-- Name: schedules schedules_notify_due_on_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER schedules_notify_due_on_update AFTER UPDATE OF next_run_at ON public.schedules FOR EACH ROW WHEN (((new.next_run_at IS NOT NULL) AND (old.next_run_at IS DISTINCT FROM new.next_run_at))) EXECUTE FUNCTION public.schedules_notify_due();

--
-- Name: tasks tasks_resolved_at; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tasks_resolved_at BEFORE UPDATE OF status ON public.tasks FOR EACH ROW WHEN (((old.status = 'waiting'::text) AND (new.status <> 'waiting'::text))) EXECUTE FUNCTION public.tasks_resolved_at();

--
-- Name: completion_tokens completion_tokens_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.completion_tokens
    ADD CONSTRAINT completion_tokens_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;

--
-- Name: idempotency_keys idempotency_keys_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
