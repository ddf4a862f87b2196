-- sluice.default_max_map_tasks, as the migrations create it (last defined in supabase/migrations/20261130000100_sluice_definitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.default_max_map_tasks() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 10000 $$;
