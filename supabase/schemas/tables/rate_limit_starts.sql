-- sluice.rate_limit_starts, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.rate_limit_starts (
    flow_slug text NOT NULL,
    step_slug text NOT NULL,
    rate_key text NOT NULL,
    started_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE sluice.rate_limit_starts IS 'The recent first claims of each rate-limited step''s tasks, per key: the window a rate limit counts.';

CREATE INDEX rate_limit_starts_key_idx ON sluice.rate_limit_starts USING btree (flow_slug, step_slug, rate_key, started_at);

ALTER TABLE ONLY sluice.rate_limit_starts
    ADD CONSTRAINT rate_limit_starts_flow_slug_step_slug_fkey FOREIGN KEY (flow_slug, step_slug) REFERENCES sluice.steps(flow_slug, step_slug) ON DELETE CASCADE;

CREATE POLICY flow_access ON sluice.rate_limit_starts USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.rate_limit_starts ENABLE ROW LEVEL SECURITY;
