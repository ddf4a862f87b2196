-- sluice.complete_task, as the migrations create it (last defined in supabase/migrations/20261130000700_sluice_complete_tasks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.complete_task(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid, output jsonb) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL, not SQL, so that the call is not parsed and planned again every time.
  return case when (sluice.complete_tasks(jsonb_build_array(jsonb_build_object(
    'run_id', complete_task.run_id,
    'step_slug', complete_task.step_slug,
    'task_index', complete_task.task_index,
    'attempt', complete_task.attempt,
    'worker_id', complete_task.worker_id,
    'output', complete_task.output
  ))) ->> 'completed')::integer = 1 then 'completed' else 'stale' end;
end;
$$;
