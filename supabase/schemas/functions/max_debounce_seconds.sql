-- sluice.max_debounce_seconds, as the migrations create it (last defined in supabase/migrations/20261207232000_sluice_debounced_start.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The longest debounce window (and max wait), in seconds: 7 days.
CREATE OR REPLACE FUNCTION sluice.max_debounce_seconds() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 604800 $$;
