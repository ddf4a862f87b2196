-- sluice.run_ancestors, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The ancestors of run_ids: their parent runs (subflows), the parents' parents, and so on.
CREATE OR REPLACE FUNCTION sluice.run_ancestors(run_ids uuid[]) RETURNS uuid[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with recursive a(run_id) as (
    select r.parent_run_id from sluice.runs r
    where r.run_id = any (run_ancestors.run_ids) and r.parent_run_id is not null
    union
    select r.parent_run_id from sluice.runs r
    join a on r.run_id = a.run_id
    where r.parent_run_id is not null
  )
  select coalesce(array_agg(a.run_id), '{}') from a
$$;
