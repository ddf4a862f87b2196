-- sluice.workers, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.workers (
    worker_id uuid NOT NULL,
    function_name text NOT NULL,
    queue_name text NOT NULL,
    flow_slug text,
    step_slug text,
    flow_generation bigint,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    deprecated_at timestamp with time zone,
    stopped_at timestamp with time zone
);

ALTER TABLE ONLY sluice.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (worker_id);

CREATE INDEX workers_queue_live_idx ON sluice.workers USING btree (queue_name) WHERE (stopped_at IS NULL);

ALTER TABLE ONLY sluice.workers
    ADD CONSTRAINT workers_function_name_fkey FOREIGN KEY (function_name) REFERENCES sluice.worker_functions(function_name);

CREATE POLICY flow_access ON sluice.workers USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.workers ENABLE ROW LEVEL SECURITY;

--
-- PostgreSQL database dump complete
--
