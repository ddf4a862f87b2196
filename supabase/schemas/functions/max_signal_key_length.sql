-- sluice.max_signal_key_length, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The longest signal key and signal id.
CREATE OR REPLACE FUNCTION sluice.max_signal_key_length() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 1000 $$;
