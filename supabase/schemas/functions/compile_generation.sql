-- sluice.compile_generation, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The flow's current compile_generation (see sluice.flows), which ensure_flow_compiled answers.
CREATE OR REPLACE FUNCTION sluice.compile_generation(flow_slug text) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select f.compile_generation from sluice.flows f where f.flow_slug = compile_generation.flow_slug
$$;
