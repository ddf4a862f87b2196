-- sluice.alias_history, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.alias_history (
    alias text NOT NULL,
    flow_slug text NOT NULL,
    generation bigint NOT NULL,
    activated_at timestamp with time zone DEFAULT now() NOT NULL,
    previous_flow_slug text,
    activated_by text DEFAULT CURRENT_USER NOT NULL,
    forced boolean DEFAULT false NOT NULL
);

COMMENT ON TABLE sluice.alias_history IS 'Every activation of every alias, append-only: sluice.activate_alias inserts, nothing updates or deletes.';

ALTER TABLE ONLY sluice.alias_history
    ADD CONSTRAINT alias_history_pkey PRIMARY KEY (alias, generation);

CREATE TRIGGER alias_history_append_only BEFORE DELETE OR UPDATE ON sluice.alias_history FOR EACH ROW EXECUTE FUNCTION sluice.refuse_alias_history_change();

ALTER TABLE sluice.alias_history ENABLE ROW LEVEL SECURITY;

CREATE POLICY flow_access ON sluice.alias_history USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), alias))) WITH CHECK (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), alias) AND sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug))));
