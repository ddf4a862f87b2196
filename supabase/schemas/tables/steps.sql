-- sluice.steps, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.steps (
    flow_slug text NOT NULL,
    step_slug text NOT NULL,
    step_index integer NOT NULL,
    step_type text NOT NULL,
    map_source text,
    deps_count integer NOT NULL,
    opt_max_attempts integer,
    opt_base_delay integer,
    opt_timeout integer,
    opt_start_delay integer,
    required_input_pattern jsonb,
    forbidden_input_pattern jsonb,
    when_unmet text DEFAULT 'skip'::text NOT NULL,
    when_exhausted text DEFAULT 'fail'::text NOT NULL,
    queue_name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_options jsonb,
    opt_concurrency_limit integer,
    opt_concurrency_key text[],
    opt_rate_limit integer,
    opt_rate_period integer,
    CONSTRAINT steps_check CHECK (((map_source IS NULL) OR (step_type = 'map'::text))),
    CONSTRAINT steps_check1 CHECK (((map_source IS NULL) OR (deps_count = 1))),
    CONSTRAINT steps_check2 CHECK (((opt_rate_limit IS NULL) = (opt_rate_period IS NULL))),
    CONSTRAINT steps_deps_count_check CHECK ((deps_count >= 0)),
    CONSTRAINT steps_forbidden_input_pattern_check CHECK ((jsonb_typeof(forbidden_input_pattern) = 'object'::text)),
    CONSTRAINT steps_opt_base_delay_check CHECK ((opt_base_delay >= 1)),
    CONSTRAINT steps_opt_concurrency_limit_check CHECK ((opt_concurrency_limit >= 1)),
    CONSTRAINT steps_opt_max_attempts_check CHECK ((opt_max_attempts >= 1)),
    CONSTRAINT steps_opt_rate_limit_check CHECK ((opt_rate_limit >= 1)),
    CONSTRAINT steps_opt_rate_period_check CHECK ((opt_rate_period >= 1)),
    CONSTRAINT steps_opt_start_delay_check CHECK ((opt_start_delay >= 0)),
    CONSTRAINT steps_opt_timeout_check CHECK ((opt_timeout >= 1)),
    CONSTRAINT steps_required_input_pattern_check CHECK ((jsonb_typeof(required_input_pattern) = 'object'::text)),
    CONSTRAINT steps_step_index_check CHECK ((step_index >= 0)),
    CONSTRAINT steps_step_slug_check CHECK ((sluice.is_valid_slug(step_slug) AND (step_slug <> 'run'::text))),
    CONSTRAINT steps_step_type_check CHECK ((step_type = ANY (ARRAY['single'::text, 'map'::text, 'sleep'::text, 'signal'::text, 'subflow'::text]))),
    CONSTRAINT steps_wait_options_check CHECK (((step_type = ANY (ARRAY['sleep'::text, 'signal'::text, 'subflow'::text])) = (wait_options IS NOT NULL))),
    CONSTRAINT steps_when_exhausted_check CHECK ((when_exhausted = ANY (ARRAY['fail'::text, 'skip'::text, 'skip-cascade'::text]))),
    CONSTRAINT steps_when_unmet_check CHECK ((when_unmet = ANY (ARRAY['fail'::text, 'skip'::text, 'skip-cascade'::text])))
);

ALTER TABLE ONLY sluice.steps
    ADD CONSTRAINT steps_flow_slug_step_index_key UNIQUE (flow_slug, step_index);

ALTER TABLE ONLY sluice.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (flow_slug, step_slug);

CREATE UNIQUE INDEX steps_lower_slug_key ON sluice.steps USING btree (flow_slug, lower(step_slug));

CREATE INDEX steps_queue_name_idx ON sluice.steps USING btree (queue_name);

ALTER TABLE ONLY sluice.steps
    ADD CONSTRAINT steps_flow_slug_fkey FOREIGN KEY (flow_slug) REFERENCES sluice.flows(flow_slug) ON DELETE CASCADE;

ALTER TABLE ONLY sluice.steps
    ADD CONSTRAINT steps_queue_name_fkey FOREIGN KEY (queue_name) REFERENCES sluice.queues(queue_name);

CREATE POLICY flow_access ON sluice.steps USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.steps ENABLE ROW LEVEL SECURITY;
