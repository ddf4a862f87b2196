-- sluice.runs, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.runs (
    run_id uuid DEFAULT gen_random_uuid() NOT NULL,
    flow_slug text NOT NULL,
    started_via text NOT NULL,
    status text DEFAULT 'started'::text NOT NULL,
    input jsonb NOT NULL,
    output jsonb,
    error_message text,
    remaining_steps integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    failed_at timestamp with time zone,
    cancelled_at timestamp with time zone,
    cancel_reason text,
    cancelled_by text,
    retry_count integer DEFAULT 0 NOT NULL,
    retried_at timestamp with time zone,
    retried_by text,
    traceparent text,
    parent_run_id uuid,
    parent_step_slug text,
    parent_task_index integer,
    depth integer DEFAULT 0 NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    CONSTRAINT runs_cancelled_check CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
    CONSTRAINT runs_check CHECK ((num_nonnulls(completed_at, failed_at) <= 1)),
    CONSTRAINT runs_check1 CHECK (((status = 'completed'::text) = (completed_at IS NOT NULL))),
    CONSTRAINT runs_check2 CHECK (((status = 'failed'::text) = (failed_at IS NOT NULL))),
    CONSTRAINT runs_depth_check CHECK ((depth >= 0)),
    CONSTRAINT runs_finished_once_check CHECK ((num_nonnulls(completed_at, failed_at, cancelled_at) <= 1)),
    CONSTRAINT runs_parent_check CHECK (((num_nonnulls(parent_run_id, parent_step_slug, parent_task_index) = ANY (ARRAY[0, 3])) AND ((parent_run_id IS NULL) = (depth = 0)))),
    CONSTRAINT runs_parent_task_index_check CHECK ((parent_task_index >= 0)),
    CONSTRAINT runs_priority_check CHECK (((priority >= '-1000'::integer) AND (priority <= 1000))),
    CONSTRAINT runs_remaining_steps_check CHECK ((remaining_steps >= 0)),
    CONSTRAINT runs_retried_check CHECK (((retry_count > 0) = (retried_at IS NOT NULL))),
    CONSTRAINT runs_retry_count_check CHECK ((retry_count >= 0)),
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['started'::text, 'completed'::text, 'failed'::text, 'cancelled'::text])))
)
WITH (fillfactor='60');

COMMENT ON COLUMN sluice.runs.cancelled_by IS 'The database role (current_user) that cancelled the run.';

COMMENT ON COLUMN sluice.runs.retried_by IS 'The database role (current_user) that called sluice.retry_run last.';

COMMENT ON COLUMN sluice.runs.traceparent IS 'The W3C traceparent of the context that started the run (sluice.caller_traceparent), or null.';

COMMENT ON COLUMN sluice.runs.parent_run_id IS 'The run whose subflow step started this run (null for a run started by a producer).';

COMMENT ON COLUMN sluice.runs.parent_task_index IS 'The element of the parent''s map subflow this run is the child of (0 for a subflow).';

COMMENT ON COLUMN sluice.runs.depth IS 'How many subflow levels are above this run: 0 for a root run (sluice.max_subflow_depth).';

COMMENT ON COLUMN sluice.runs.priority IS 'The run''s priority (higher first within a queue; 0 by default), copied to its tasks.';

ALTER TABLE ONLY sluice.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (run_id);

CREATE INDEX runs_active_idx ON sluice.runs USING btree (flow_slug) WHERE (status = 'started'::text);

CREATE INDEX runs_finished_idx ON sluice.runs USING btree (COALESCE(completed_at, failed_at, cancelled_at)) WHERE (status <> 'started'::text);

CREATE INDEX runs_flow_slug_idx ON sluice.runs USING btree (flow_slug);

CREATE UNIQUE INDEX runs_parent_key ON sluice.runs USING btree (parent_run_id, parent_step_slug, parent_task_index) WHERE (parent_run_id IS NOT NULL);

CREATE TRIGGER runs_child_end_event AFTER UPDATE OF status ON sluice.runs FOR EACH ROW WHEN (((new.parent_run_id IS NOT NULL) AND (old.status IS DISTINCT FROM new.status) AND (new.status <> 'started'::text))) EXECUTE FUNCTION sluice.send_child_event();

CREATE CONSTRAINT TRIGGER runs_finished_event AFTER UPDATE OF status ON sluice.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((old.status IS DISTINCT FROM new.status)) EXECUTE FUNCTION sluice.send_run_status_event();

CREATE TRIGGER runs_started_event AFTER INSERT ON sluice.runs FOR EACH ROW EXECUTE FUNCTION sluice.send_run_status_event();

ALTER TABLE ONLY sluice.runs
    ADD CONSTRAINT runs_flow_slug_fkey FOREIGN KEY (flow_slug) REFERENCES sluice.flows(flow_slug);

CREATE POLICY flow_access ON sluice.runs USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.runs ENABLE ROW LEVEL SECURITY;
