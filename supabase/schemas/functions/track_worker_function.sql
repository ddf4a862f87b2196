-- sluice.track_worker_function, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.track_worker_function(function_name text) RETURNS sluice.worker_functions
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  insert into sluice.worker_functions as wf (function_name)
  values (track_worker_function.function_name)
  on conflict (function_name) do update set updated_at = now()
  returning wf.*
$$;
