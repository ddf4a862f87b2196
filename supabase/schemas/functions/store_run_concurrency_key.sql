-- sluice.store_run_concurrency_key, as the migrations create it (last defined in supabase/migrations/20261207232321_sluice_concurrency_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Records the concurrency key a start gave the run it is about to create (nothing for none), for
-- its limited steps to count under (sluice.task_concurrency_key). A run id that already exists
-- keeps its key: create_run then refuses the start, naming the run.
CREATE OR REPLACE FUNCTION sluice.store_run_concurrency_key(run_id uuid, concurrency_key text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  insert into sluice.run_concurrency_keys (run_id, concurrency_key)
  select store_run_concurrency_key.run_id, store_run_concurrency_key.concurrency_key
  where store_run_concurrency_key.concurrency_key is not null
  on conflict do nothing
$$;
