-- sluice.run_topic, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The Supabase Realtime topic of a run.
CREATE OR REPLACE FUNCTION sluice.run_topic(run_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 'sluice:run:' || run_id::text $$;
