-- sluice.signal_lifetime, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- How long a signal is kept after it was sent.
CREATE OR REPLACE FUNCTION sluice.signal_lifetime() RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select interval '7 days' $$;
