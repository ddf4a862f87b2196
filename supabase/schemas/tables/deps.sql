-- sluice.deps, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.deps (
    flow_slug text NOT NULL,
    dep_slug text NOT NULL,
    step_slug text NOT NULL,
    CONSTRAINT deps_check CHECK ((dep_slug <> step_slug))
);

ALTER TABLE ONLY sluice.deps
    ADD CONSTRAINT deps_pkey PRIMARY KEY (flow_slug, step_slug, dep_slug);

CREATE INDEX deps_dependents_idx ON sluice.deps USING btree (flow_slug, dep_slug);

ALTER TABLE ONLY sluice.deps
    ADD CONSTRAINT deps_flow_slug_dep_slug_fkey FOREIGN KEY (flow_slug, dep_slug) REFERENCES sluice.steps(flow_slug, step_slug) ON DELETE CASCADE;

ALTER TABLE ONLY sluice.deps
    ADD CONSTRAINT deps_flow_slug_step_slug_fkey FOREIGN KEY (flow_slug, step_slug) REFERENCES sluice.steps(flow_slug, step_slug) ON DELETE CASCADE;

ALTER TABLE sluice.deps ENABLE ROW LEVEL SECURITY;

CREATE POLICY flow_access ON sluice.deps USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));
