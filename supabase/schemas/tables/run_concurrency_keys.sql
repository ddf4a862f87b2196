-- sluice.run_concurrency_keys, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.run_concurrency_keys (
    run_id uuid NOT NULL,
    concurrency_key text NOT NULL
);

COMMENT ON TABLE sluice.run_concurrency_keys IS 'The concurrency key a start gave its run (startFlow(..., { concurrencyKey })); deleted with its run.';

ALTER TABLE ONLY sluice.run_concurrency_keys
    ADD CONSTRAINT run_concurrency_keys_pkey PRIMARY KEY (run_id);

ALTER TABLE ONLY sluice.run_concurrency_keys
    ADD CONSTRAINT run_concurrency_keys_run_id_fkey FOREIGN KEY (run_id) REFERENCES sluice.runs(run_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;

CREATE POLICY flow_access ON sluice.run_concurrency_keys USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (NOT sluice.run_outside_scope(run_id))));

ALTER TABLE sluice.run_concurrency_keys ENABLE ROW LEVEL SECURITY;
