-- sluice.fail_task, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130000800, except that the attempt cap counts the current retry round
-- only (attempts_count - attempts_base), and so does the backoff.
CREATE OR REPLACE FUNCTION sluice.fail_task(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid, error text, retry_delay_seconds double precision DEFAULT NULL::double precision) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_task sluice.step_tasks;
  v_max_attempts integer;
  v_base_delay integer;
  v_delay integer;
begin
  if fail_task.retry_delay_seconds is not null
    and not (fail_task.retry_delay_seconds >= 0
      and fail_task.retry_delay_seconds <= sluice.max_retry_delay_seconds())
  then
    raise exception 'Cannot fail task (run %, step "%", index %): retry_delay_seconds must be a finite number from 0 to %, got %',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index,
      sluice.max_retry_delay_seconds(), fail_task.retry_delay_seconds
      using errcode = 'invalid_parameter_value';
  end if;

  if fail_task.attempt is null or fail_task.worker_id is null then
    raise exception 'Cannot fail task (run %, step "%", index %): attempt and worker_id are required, the fencing token its claim handed out',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index
      using errcode = 'invalid_parameter_value';
  end if;

  if sluice.worker_fenced(fail_task.worker_id) then
    return 'stale';
  end if;

  if not exists (
    select 1 from sluice.step_tasks t
    where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
      and t.task_index = fail_task.task_index
  ) then
    raise exception 'Cannot fail task (run %, step "%", index %): no such task',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index
      using errcode = 'no_data_found';
  end if;

  perform 1 from sluice.lock_run_steps(array[fail_task.run_id], array[fail_task.step_slug], false);
  if not found then
    return 'stale';
  end if;

  select * into v_task from sluice.step_tasks t
  where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
    and t.task_index = fail_task.task_index
    and t.status = 'started' and t.attempts_count = fail_task.attempt
    and t.last_worker_id = fail_task.worker_id
  for update;
  if not found then
    return 'stale';
  end if;

  select coalesce(s.opt_max_attempts, f.opt_max_attempts), coalesce(s.opt_base_delay, f.opt_base_delay)
  into v_max_attempts, v_base_delay
  from sluice.steps s
  join sluice.flows f on f.flow_slug = s.flow_slug
  where s.flow_slug = v_task.flow_slug and s.step_slug = v_task.step_slug;

  if v_task.attempts_count - v_task.attempts_base >= v_max_attempts then
    perform sluice.exhaust_task(
      fail_task.run_id, fail_task.step_slug, fail_task.task_index, fail_task.error
    );
    return 'failed';
  end if;

  v_delay := coalesce(
    ceil(fail_task.retry_delay_seconds)::integer,
    sluice.backoff_delay_seconds(v_base_delay, v_task.attempts_count - v_task.attempts_base)
  );

  update sluice.step_tasks t
  set status = 'queued', error_message = fail_task.error
  where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
    and t.task_index = fail_task.task_index;

  perform pgmq.set_vt(v_task.queue_name, v_task.message_id, v_delay);
  if not found then
    raise exception 'Cannot retry task (run %, step "%", index %): its message % is missing from queue "%"',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index, v_task.message_id,
      v_task.queue_name;
  end if;
  if v_delay = 0 then
    perform sluice.notify_queue(v_task.queue_name);
  end if;
  return 'retried';
end;
$$;
