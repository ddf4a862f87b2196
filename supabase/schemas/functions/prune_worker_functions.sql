-- sluice.prune_worker_functions, as the migrations create it (last defined in supabase/migrations/20261130001600_sluice_rollout.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes worker functions that have had no worker for `idle_for`: no worker heartbeat, stop,
-- invocation or change of the row within it. Only rows that say nothing absence would not say
-- are removed: a disabled or restart-paused function is kept (deleting it would enable it).
-- Their stopped workers go with them. Returns the names deleted.
CREATE OR REPLACE FUNCTION sluice.prune_worker_functions(idle_for interval) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_names text[];
begin
  if idle_for is null or idle_for < interval '0' then
    raise exception 'Cannot prune worker functions: idle_for must be a non-negative interval, got %',
      coalesce(idle_for::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  select array_agg(f.function_name order by f.function_name collate "C") into v_names
  from (
    select wf.function_name from sluice.worker_functions wf
    where wf.enabled and wf.restart_paused_at is null
      and greatest(wf.updated_at, wf.last_invoked_at) < now() - idle_for
      and not exists (
        select 1 from sluice.workers w
        where w.function_name = wf.function_name
          and greatest(w.last_heartbeat_at, w.stopped_at) >= now() - idle_for
      )
    order by wf.function_name collate "C"
    for update skip locked
  ) f;

  delete from sluice.workers w where w.function_name = any (v_names);
  delete from sluice.worker_functions wf where wf.function_name = any (v_names);
  return coalesce(v_names, '{}');
end;
$$;
