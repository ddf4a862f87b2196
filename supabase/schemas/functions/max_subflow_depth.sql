-- sluice.max_subflow_depth, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- How deep a tree of subflows may grow: a root run is at depth 0, its children at 1. A child
-- deeper than this is refused (SLL01), which also stops a flow that starts itself through
-- an alias.
CREATE OR REPLACE FUNCTION sluice.max_subflow_depth() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 8 $$;
