-- sluice.scope_covers, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Whether a scope (from sluice.access_scope; null: unscoped) covers a flow slug or alias name.
CREATE OR REPLACE FUNCTION sluice.scope_covers(scope text[], name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select scope is null or exists (
    select 1 from pg_catalog.unnest(scope) p
    where p = name
      or (pg_catalog.right(p, 1) = '*'
        and pg_catalog.starts_with(name, pg_catalog.left(p, -1)))
  )
$$;
