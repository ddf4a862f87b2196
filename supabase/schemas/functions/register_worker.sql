-- sluice.register_worker, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- flow_generation: the compile_generation ensure_flow_compiled answered the worker; when null, the
-- flow's current one. A worker registered for an older compile is fenced (sluice.worker_fenced).
CREATE OR REPLACE FUNCTION sluice.register_worker(worker_id uuid, function_name text, queue_name text, flow_slug text, step_slug text DEFAULT NULL::text, flow_generation bigint DEFAULT NULL::bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not exists (
    select 1 from sluice.worker_functions wf
    where wf.function_name = register_worker.function_name
  ) then
    raise exception 'Cannot register worker %: worker function "%" is not tracked; call sluice.track_worker_function first',
      register_worker.worker_id, register_worker.function_name;
  end if;
  insert into sluice.workers (
    worker_id, function_name, queue_name, flow_slug, step_slug, flow_generation
  )
  values (
    register_worker.worker_id, register_worker.function_name, lower(register_worker.queue_name),
    register_worker.flow_slug, register_worker.step_slug,
    coalesce(register_worker.flow_generation, (
      select f.compile_generation from sluice.flows f
      where f.flow_slug = register_worker.flow_slug
    ))
  );
end;
$$;
