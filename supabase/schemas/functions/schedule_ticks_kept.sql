-- sluice.schedule_ticks_kept, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- How many of a schedule's latest fired ticks sluice.schedule_ticks keeps.
CREATE OR REPLACE FUNCTION sluice.schedule_ticks_kept() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 1000 $$;
