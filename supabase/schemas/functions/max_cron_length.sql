-- sluice.max_cron_length, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The longest cron expression a schedule takes.
CREATE OR REPLACE FUNCTION sluice.max_cron_length() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 1000 $$;
