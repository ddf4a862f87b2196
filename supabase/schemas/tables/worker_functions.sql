-- sluice.worker_functions, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.worker_functions (
    function_name text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    restart_paused_at timestamp with time zone,
    pause_reason text,
    last_invoked_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT worker_functions_check CHECK (((restart_paused_at IS NULL) = (pause_reason IS NULL))),
    CONSTRAINT worker_functions_function_name_check CHECK ((function_name <> ''::text))
);

ALTER TABLE ONLY sluice.worker_functions
    ADD CONSTRAINT worker_functions_pkey PRIMARY KEY (function_name);

CREATE POLICY flow_access ON sluice.worker_functions USING ((NOT sluice.function_outside_scope(function_name, ( SELECT sluice.access_scope(CURRENT_USER) AS access_scope))));

ALTER TABLE sluice.worker_functions ENABLE ROW LEVEL SECURITY;
