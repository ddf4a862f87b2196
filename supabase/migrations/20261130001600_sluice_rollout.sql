-- The operator's fence for production rollouts, and the upkeep of worker-function rows.
--
-- A rollout replaces the complete affected set of worker functions: record their `enabled`
-- values, disable them (no respawn, no new worker on Edge), deprecate their live workers (each
-- stops polling, finishes what it claimed and stops), wait until the set has drained (no fresh
-- heartbeat, no `started` task claimed by one of its workers), deploy, restore the recorded
-- values exactly, confirm route coverage. The functions here are the steps that change data;
-- the waiting is the caller's (`deno task ops fence ...`), reading sluice.worker_function_drain.
--
-- Lock order: sluice.worker_functions rows in function_name order (collate "C"), then
-- sluice.workers rows. No function here locks runs, step states or tasks, so none can deadlock
-- with a claim, a completion or recovery.
-- Invariants: an untracked worker function behaves as enabled (the Edge adapter starts it and
-- a new row defaults to enabled), so its recorded value is true; every change is one statement
-- or one transaction, validated before anything is written.

-- Sets `enabled` of each worker function named in `settings` (an object: name -> true/false),
-- creating rows for untracked names, and returns every name with its previous value: the record
-- a later call restores exactly (false stays false).
create function sluice.set_worker_functions_enabled(settings jsonb)
returns table (function_name text, was_tracked boolean, previous_enabled boolean, enabled boolean)
language plpgsql
as $$
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

-- Deprecates every worker of the named functions that has not stopped: at its next heartbeat it
-- stops polling, finishes the tasks it claimed and stops. Returns how many it deprecated now
-- (workers deprecated before are left as they are). Unknown names are rejected before any change.
create function sluice.deprecate_function_workers(function_names text[])
returns integer
language plpgsql
as $$
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

-- Per worker function, what a drain waits for: workers with a fresh heartbeat (and those of them
-- not deprecated, which still poll), the tasks its workers claimed that are still `started`,
-- and the tasks queued on the routes its workers serve. `drained` is the drain's end condition.
create view sluice.worker_function_drain as
with counts as (
  select f.function_name, f.enabled,
    (select count(*)::integer from sluice.live_workers w where w.function_name = f.function_name)
      as live_workers,
    (
      select count(*)::integer from sluice.live_workers w
      where w.function_name = f.function_name and w.deprecated_at is null
    ) as serving_workers,
    (
      select max(w.last_heartbeat_at) from sluice.workers w
      where w.function_name = f.function_name and w.stopped_at is null
    ) as last_heartbeat_at,
    (
      select count(*)::integer from sluice.step_tasks t
      where t.status = 'started' and t.started_at is not null
        and t.last_worker_id in (
          select w.worker_id from sluice.workers w where w.function_name = f.function_name
        )
    ) as started_tasks,
    (
      select count(*)::integer from sluice.step_tasks t
      where t.status = 'queued'
        and exists (
          select 1 from sluice.workers w
          where w.function_name = f.function_name
            and w.queue_name = t.queue_name
            and w.flow_slug = t.flow_slug
            and (w.step_slug is null or w.step_slug = t.step_slug)
        )
    ) as queued_tasks
  from sluice.worker_functions f
)
select c.*, c.live_workers = 0 and c.started_tasks = 0 as drained
from counts c;

-- Deletes worker functions that have had no worker for `idle_for`: no worker heartbeat, stop,
-- invocation or change of the row within it. Only rows that say nothing absence would not say
-- are removed: a disabled or restart-paused function is kept (deleting it would enable it).
-- Their stopped workers go with them. Returns the names deleted.
create function sluice.prune_worker_functions(idle_for interval)
returns text[]
language plpgsql
as $$
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

-- Archives messages of a queue that no worker may handle (the way out of a restart pause caused
-- by a stray message). A message that still carries a queued or started task is refused: its task
-- would never run. Nothing needs locking for that check: a task's message never changes, and a
-- task never returns to queued or started once terminal. Returns the ids archived and those the
-- queue did not hold.
create function sluice.archive_messages(queue_name text, message_ids bigint[])
returns jsonb
language plpgsql
as $$
declare
  v_queue text := lower(archive_messages.queue_name);
  v_task record;
  v_archived bigint[];
begin
  if not exists (select 1 from pgmq.meta m where lower(m.queue_name) = v_queue) then
    raise exception 'Cannot archive messages of queue "%": no such queue', archive_messages.queue_name
      using errcode = 'no_data_found';
  end if;
  if message_ids is null or cardinality(message_ids) = 0 or array_position(message_ids, null) is not null
  then
    raise exception 'Cannot archive messages of queue "%": give one or more message ids, got %',
      v_queue, coalesce(message_ids::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select t.message_id, t.run_id, t.step_slug, t.task_index, t.status into v_task
  from sluice.step_tasks t
  where t.queue_name = v_queue and t.message_id = any (message_ids)
    and t.status in ('queued', 'started')
  order by t.message_id
  limit 1;
  if found then
    raise exception 'Cannot archive message % of queue "%": it carries task (%, %, %), which is %; only messages no task waits on may be archived',
      v_task.message_id, v_queue, v_task.run_id, v_task.step_slug, v_task.task_index, v_task.status
      using errcode = 'object_in_use';
  end if;

  select coalesce(array_agg(a order by a), '{}') into v_archived
  from pgmq.archive(v_queue, message_ids) a;
  return jsonb_build_object(
    'archived', to_jsonb(v_archived),
    'missing', to_jsonb(array(
      select distinct m from unnest(message_ids) m where m <> all (v_archived) order by m
    ))
  );
end;
$$;

-- PostgreSQL grants EXECUTE on new functions to PUBLIC; sluice functions are for granted roles only.
revoke all on all routines in schema sluice from public;
