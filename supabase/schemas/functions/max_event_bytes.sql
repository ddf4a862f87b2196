-- sluice.max_event_bytes, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- NOTIFY refuses a payload of 8000 bytes or more.
CREATE OR REPLACE FUNCTION sluice.max_event_bytes() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 7999 $$;
