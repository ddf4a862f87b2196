-- sluice.step_states, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.step_states (
    run_id uuid NOT NULL,
    step_slug text NOT NULL,
    flow_slug text NOT NULL,
    status text DEFAULT 'created'::text NOT NULL,
    remaining_deps integer NOT NULL,
    initial_tasks integer,
    remaining_tasks integer,
    output jsonb,
    skip_reason text,
    error_message text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    failed_at timestamp with time zone,
    skipped_at timestamp with time zone,
    cancelled_at timestamp with time zone,
    progress_sent_at timestamp with time zone,
    wait_key text,
    wait_seconds integer,
    wait_until timestamp with time zone,
    waiting_at timestamp with time zone,
    wait_signal_id text,
    wait_input jsonb,
    CONSTRAINT step_states_check CHECK ((num_nonnulls(completed_at, failed_at, skipped_at, cancelled_at) <= 1)),
    CONSTRAINT step_states_check1 CHECK (((status = 'completed'::text) = (completed_at IS NOT NULL))),
    CONSTRAINT step_states_check2 CHECK (((status = 'failed'::text) = (failed_at IS NOT NULL))),
    CONSTRAINT step_states_check3 CHECK (((status = 'skipped'::text) = ((skipped_at IS NOT NULL) AND (skip_reason IS NOT NULL)))),
    CONSTRAINT step_states_check4 CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
    CONSTRAINT step_states_initial_tasks_check CHECK ((initial_tasks >= 0)),
    CONSTRAINT step_states_remaining_deps_check CHECK ((remaining_deps >= 0)),
    CONSTRAINT step_states_remaining_tasks_check CHECK ((remaining_tasks >= 0)),
    CONSTRAINT step_states_skip_reason_check CHECK ((skip_reason = ANY (ARRAY['condition_unmet'::text, 'retries_exhausted'::text, 'dependency_skipped'::text, 'wait_timed_out'::text]))),
    CONSTRAINT step_states_status_check CHECK ((status = ANY (ARRAY['created'::text, 'started'::text, 'waiting'::text, 'completed'::text, 'failed'::text, 'skipped'::text, 'cancelled'::text]))),
    CONSTRAINT step_states_wait_seconds_check CHECK ((wait_seconds >= 0)),
    CONSTRAINT step_states_waiting_check CHECK (((status <> 'waiting'::text) OR (waiting_at IS NOT NULL)))
)
WITH (fillfactor='60');

COMMENT ON COLUMN sluice.step_states.wait_input IS 'A subflow step''s child input (a map subflow''s: the array of its children''s inputs), computed by the worker that completed its dependency.';

ALTER TABLE ONLY sluice.step_states
    ADD CONSTRAINT step_states_pkey PRIMARY KEY (run_id, step_slug);

CREATE INDEX step_states_ready_idx ON sluice.step_states USING btree (run_id) WHERE ((status = 'created'::text) AND (remaining_deps = 0));

CREATE INDEX step_states_wait_key_idx ON sluice.step_states USING btree (wait_key) WHERE ((status = 'waiting'::text) AND (wait_key IS NOT NULL));

CREATE INDEX step_states_wait_until_idx ON sluice.step_states USING btree (wait_until) WHERE ((status = 'waiting'::text) AND (wait_until IS NOT NULL));

CREATE TRIGGER step_states_progress_event BEFORE UPDATE OF remaining_tasks ON sluice.step_states FOR EACH ROW WHEN (((old.status = 'started'::text) AND (new.status = 'started'::text) AND (new.remaining_tasks < old.remaining_tasks))) EXECUTE FUNCTION sluice.send_step_progress_event();

CREATE TRIGGER step_states_status_event AFTER UPDATE OF status ON sluice.step_states FOR EACH ROW WHEN ((old.status IS DISTINCT FROM new.status)) EXECUTE FUNCTION sluice.send_step_status_event();

ALTER TABLE ONLY sluice.step_states
    ADD CONSTRAINT step_states_flow_slug_step_slug_fkey FOREIGN KEY (flow_slug, step_slug) REFERENCES sluice.steps(flow_slug, step_slug);

ALTER TABLE ONLY sluice.step_states
    ADD CONSTRAINT step_states_run_id_fkey FOREIGN KEY (run_id) REFERENCES sluice.runs(run_id) ON DELETE CASCADE;

CREATE POLICY flow_access ON sluice.step_states USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.step_states ENABLE ROW LEVEL SECURITY;
