-- sluice.max_queue_name_length, as the migrations create it (last defined in supabase/migrations/20261130001000_sluice_queue_names.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.max_queue_name_length() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 47 $$;
