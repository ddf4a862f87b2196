-- sluice.debounced_starts, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.debounced_starts (
    flow_ref text NOT NULL,
    debounce_key text NOT NULL,
    flow_slug text NOT NULL,
    run_id uuid NOT NULL,
    input jsonb NOT NULL,
    traceparent text,
    starts integer DEFAULT 1 NOT NULL,
    first_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    last_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    due_at timestamp with time zone NOT NULL,
    max_due_at timestamp with time zone,
    error_message text,
    priority integer DEFAULT 0 NOT NULL,
    CONSTRAINT debounced_starts_starts_check CHECK ((starts >= 1))
);

COMMENT ON TABLE sluice.debounced_starts IS 'Pending debounced starts, one per name started and debounce key: the run is created with input when due_at passes (sluice.start_due_debounced).';

COMMENT ON COLUMN sluice.debounced_starts.run_id IS 'The id of the run this pending start creates, returned to every start that joined it.';

COMMENT ON COLUMN sluice.debounced_starts.starts IS 'How many starts joined this pending start (the first included).';

COMMENT ON COLUMN sluice.debounced_starts.max_due_at IS 'The latest due time: first_at + max_wait_seconds of the first start, or null (no cap).';

COMMENT ON COLUMN sluice.debounced_starts.error_message IS 'Why creating the run failed when it was due (e.g. the flow was deleted); such a row is not retried, and the next start of its key replaces it.';

COMMENT ON COLUMN sluice.debounced_starts.priority IS 'The priority of the last start that joined this pending start: its run''s.';

ALTER TABLE ONLY sluice.debounced_starts
    ADD CONSTRAINT debounced_starts_pkey PRIMARY KEY (flow_ref, debounce_key);

CREATE INDEX debounced_starts_due_idx ON sluice.debounced_starts USING btree (due_at) WHERE (error_message IS NULL);

CREATE UNIQUE INDEX debounced_starts_run_id_key ON sluice.debounced_starts USING btree (run_id);

ALTER TABLE sluice.debounced_starts ENABLE ROW LEVEL SECURITY;

CREATE POLICY flow_access ON sluice.debounced_starts USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));
