-- sluice.deprecate_function_workers, as the migrations create it (last defined in supabase/migrations/20261130001600_sluice_rollout.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deprecates every worker of the named functions that has not stopped: at its next heartbeat it
-- stops polling, finishes the tasks it claimed and stops. Returns how many it deprecated now
-- (workers deprecated before are left as they are). Unknown names are rejected before any change.
CREATE OR REPLACE FUNCTION sluice.deprecate_function_workers(function_names text[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_unknown text;
  v_count integer;
begin
  select n into v_unknown
  from unnest(coalesce(function_names, '{}')) n
  where n is null
    or not exists (select 1 from sluice.worker_functions wf where wf.function_name = n)
  order by n collate "C" nulls first
  limit 1;
  if found then
    raise exception 'Cannot deprecate the workers of worker function %: no such worker function',
      coalesce('"' || v_unknown || '"', 'null')
      using errcode = 'no_data_found';
  end if;

  with deprecated as (
    update sluice.workers w set deprecated_at = now()
    where w.worker_id in (
      select w2.worker_id from sluice.workers w2
      where w2.function_name = any (function_names)
        and w2.stopped_at is null
        and w2.deprecated_at is null
      order by w2.function_name collate "C", w2.worker_id
      for update
    )
    returning 1
  )
  select count(*) into v_count from deprecated;
  return v_count;
end;
$$;
