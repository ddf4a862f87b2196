-- sluice.concurrency_key_path, as the migrations create it (last defined in supabase/migrations/20261207232321_sluice_concurrency_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A definition's concurrency key path (a JSON array of strings, or null) as the text[] the step
-- stores.
CREATE OR REPLACE FUNCTION sluice.concurrency_key_path(path jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when jsonb_typeof(concurrency_key_path.path) = 'array' then
    array(select p from jsonb_array_elements_text(concurrency_key_path.path)
      with ordinality as e(p, ord) order by e.ord)
  end
$$;
