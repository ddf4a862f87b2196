-- sluice.task_concurrency_key, as the migrations create it (last defined in supabase/migrations/20261207232321_sluice_concurrency_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The key a limited step's task of a run counts under: the run input's value at the step's key
-- path (its text; '' where the path is absent), else the run's start concurrency key, else ''
-- (one limit shared by every run).
CREATE OR REPLACE FUNCTION sluice.task_concurrency_key(run_id uuid, key_path text[]) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case
    when task_concurrency_key.key_path is not null then coalesce((
      select r.input #>> task_concurrency_key.key_path from sluice.runs r
      where r.run_id = task_concurrency_key.run_id), '')
    else coalesce((
      select k.concurrency_key from sluice.run_concurrency_keys k
      where k.run_id = task_concurrency_key.run_id), '')
  end
$$;
