-- sluice.set_worker_functions_enabled, as the migrations create it (last defined in supabase/migrations/20261130001600_sluice_rollout.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Sets `enabled` of each worker function named in `settings` (an object: name -> true/false),
-- creating rows for untracked names, and returns every name with its previous value: the record
-- a later call restores exactly (false stays false).
CREATE OR REPLACE FUNCTION sluice.set_worker_functions_enabled(settings jsonb) RETURNS TABLE(function_name text, was_tracked boolean, previous_enabled boolean, enabled boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
  v_bad record;
begin
  if settings is null or jsonb_typeof(settings) <> 'object' then
    raise exception 'Cannot set enabled of worker functions: expected an object of function name -> true/false, got %',
      coalesce(settings::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select s.key, s.value into v_bad
  from jsonb_each(settings) s
  where s.key = '' or jsonb_typeof(s.value) <> 'boolean'
  order by s.key collate "C"
  limit 1;
  if found then
    raise exception 'Cannot set enabled of worker function "%": expected a non-empty name and true or false, got %',
      v_bad.key, v_bad.value
      using errcode = 'invalid_parameter_value';
  end if;

  -- Rows in name order, as every caller locks them: two overlapping fences wait, never deadlock.
  perform 1 from sluice.worker_functions wf
  where wf.function_name in (select jsonb_object_keys(settings))
  order by wf.function_name collate "C"
  for update;

  return query
  with previous as (
    select s.key as name, wf.enabled as enabled
    from jsonb_each(settings) s
    left join sluice.worker_functions wf on wf.function_name = s.key
  ),
  written as (
    insert into sluice.worker_functions as wf (function_name, enabled)
    select s.key, s.value::boolean from jsonb_each(settings) s
    on conflict (function_name) do update set enabled = excluded.enabled, updated_at = now()
    returning wf.function_name, wf.enabled
  )
  select w.function_name, p.enabled is not null, coalesce(p.enabled, true), w.enabled
  from written w
  join previous p on p.name = w.function_name
  order by w.function_name collate "C";
end;
$$;
