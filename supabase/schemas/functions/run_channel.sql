-- sluice.run_channel, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The NOTIFY channel of a run: 43 bytes, within the 63-byte identifier limit, and a plain
-- identifier (LISTEN needs no quoting).
CREATE OR REPLACE FUNCTION sluice.run_channel(run_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 'sluice_run_' || replace(run_id::text, '-', '') $$;
