-- sluice.idempotency_keys, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.idempotency_keys (
    flow_ref text NOT NULL,
    idempotency_key text NOT NULL,
    run_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE sluice.idempotency_keys IS 'The idempotency key of each run started with one, per name started (alias or concrete slug); deleted with its run.';

ALTER TABLE ONLY sluice.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (flow_ref, idempotency_key);

CREATE INDEX idempotency_keys_run_id_idx ON sluice.idempotency_keys USING btree (run_id);

ALTER TABLE ONLY sluice.idempotency_keys
    ADD CONSTRAINT idempotency_keys_run_id_fkey FOREIGN KEY (run_id) REFERENCES sluice.runs(run_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;

CREATE POLICY flow_access ON sluice.idempotency_keys USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_ref)));

ALTER TABLE sluice.idempotency_keys ENABLE ROW LEVEL SECURITY;
