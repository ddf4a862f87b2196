-- sluice.max_cancel_reason_length, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The longest cancel reason stored.
CREATE OR REPLACE FUNCTION sluice.max_cancel_reason_length() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 1000 $$;
