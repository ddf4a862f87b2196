-- sluice.aliases, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.aliases (
    alias text NOT NULL,
    flow_slug text NOT NULL,
    generation bigint DEFAULT 1 NOT NULL,
    activated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT aliases_alias_check CHECK (sluice.is_valid_slug(alias)),
    CONSTRAINT aliases_generation_check CHECK ((generation >= 1))
);

ALTER TABLE ONLY sluice.aliases
    ADD CONSTRAINT aliases_pkey PRIMARY KEY (alias);

ALTER TABLE ONLY sluice.aliases
    ADD CONSTRAINT aliases_flow_slug_fkey FOREIGN KEY (flow_slug) REFERENCES sluice.flows(flow_slug) ON DELETE CASCADE;

ALTER TABLE sluice.aliases ENABLE ROW LEVEL SECURITY;

CREATE POLICY flow_access ON sluice.aliases USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), alias))) WITH CHECK (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), alias) AND sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug))));
