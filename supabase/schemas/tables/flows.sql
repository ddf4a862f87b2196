-- sluice.flows, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.flows (
    flow_slug text NOT NULL,
    compile_generation bigint DEFAULT nextval('sluice.flow_compile_generations'::regclass) NOT NULL,
    queue_mode text NOT NULL,
    opt_max_attempts integer DEFAULT 3 NOT NULL,
    opt_base_delay integer DEFAULT 1 NOT NULL,
    opt_timeout integer DEFAULT 60 NOT NULL,
    opt_max_input_bytes integer DEFAULT sluice.default_max_json_bytes() NOT NULL,
    opt_max_output_bytes integer DEFAULT sluice.default_max_json_bytes() NOT NULL,
    opt_max_map_tasks integer DEFAULT sluice.default_max_map_tasks() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    opt_events boolean DEFAULT true NOT NULL,
    opt_progress_interval integer DEFAULT 1 NOT NULL,
    CONSTRAINT flows_flow_slug_check CHECK (sluice.is_valid_slug(flow_slug)),
    CONSTRAINT flows_opt_base_delay_check CHECK ((opt_base_delay >= 1)),
    CONSTRAINT flows_opt_max_attempts_check CHECK ((opt_max_attempts >= 1)),
    CONSTRAINT flows_opt_max_input_bytes_check CHECK ((opt_max_input_bytes >= 1)),
    CONSTRAINT flows_opt_max_map_tasks_check CHECK ((opt_max_map_tasks >= 1)),
    CONSTRAINT flows_opt_max_output_bytes_check CHECK ((opt_max_output_bytes >= 1)),
    CONSTRAINT flows_opt_progress_interval_check CHECK ((opt_progress_interval >= 0)),
    CONSTRAINT flows_opt_timeout_check CHECK ((opt_timeout >= 1)),
    CONSTRAINT flows_queue_mode_check CHECK ((queue_mode = ANY (ARRAY['flow'::text, 'step'::text, 'routed'::text])))
);

ALTER TABLE ONLY sluice.flows
    ADD CONSTRAINT flows_pkey PRIMARY KEY (flow_slug);

CREATE UNIQUE INDEX flows_lower_slug_key ON sluice.flows USING btree (lower(flow_slug));

CREATE POLICY flow_access ON sluice.flows USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.flows ENABLE ROW LEVEL SECURITY;
