-- sluice.default_max_json_bytes, as the migrations create it (last defined in supabase/migrations/20261130000100_sluice_definitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Size limits (docs/sql.md#limits), runtime options of a flow: a run input and a step output as
-- JSON text (PostgreSQL's jsonb text form) at most opt_max_input_bytes / opt_max_output_bytes,
-- a map at most opt_max_map_tasks tasks. Refusals raise SQLSTATE SLL01. The defaults here are
-- the SQL side of src/dsl/limits.ts (tests/sql/limits_test.ts holds the two equal).
CREATE OR REPLACE FUNCTION sluice.default_max_json_bytes() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 16 * 1024 * 1024 $$;
