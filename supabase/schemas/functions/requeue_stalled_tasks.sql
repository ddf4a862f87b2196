-- sluice.requeue_stalled_tasks, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130000900, except that the attempt cap counts the current retry round
-- only (attempts_count - attempts_base).
CREATE OR REPLACE FUNCTION sluice.requeue_stalled_tasks() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_candidate record;
  v_task sluice.step_tasks;
  v_error text;
  v_handled integer := 0;
begin
  for v_candidate in
    with candidates as (
      select t.run_id, t.step_slug, t.task_index, t.started_at,
        make_interval(secs =>
          coalesce(s.opt_timeout, f.opt_timeout) + sluice.stall_margin_seconds()) as stall_after,
        coalesce(s.opt_max_attempts, f.opt_max_attempts) as max_attempts
      from sluice.step_tasks t
      join sluice.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
      join sluice.flows f on f.flow_slug = t.flow_slug
      where t.status = 'started' and t.started_at is not null
        and t.started_at < clock_timestamp() - make_interval(secs =>
          coalesce(s.opt_timeout, f.opt_timeout) + sluice.stall_margin_seconds())
      order by t.started_at
      limit 100
    )
    select c.* from candidates c
    where (c.run_id, c.step_slug) in (
      select l.run_id, l.step_slug
      from sluice.lock_run_steps(
        array(select c2.run_id from candidates c2),
        array(select c2.step_slug from candidates c2),
        true
      ) l
    )
    order by c.started_at
  loop
    select * into v_task from sluice.step_tasks t
    where t.run_id = v_candidate.run_id and t.step_slug = v_candidate.step_slug
      and t.task_index = v_candidate.task_index and t.status = 'started'
    for update;
    continue when not found
      or v_task.started_at >= clock_timestamp() - v_candidate.stall_after;

    v_error := format('stalled: no report of attempt %s within %s', v_task.attempts_count,
      v_candidate.stall_after);
    if v_task.attempts_count - v_task.attempts_base < v_candidate.max_attempts then
      update sluice.step_tasks t
      set status = 'queued', requeued_count = t.requeued_count + 1, error_message = v_error
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform pgmq.set_vt(v_task.queue_name, v_task.message_id, 0);
      perform sluice.notify_queue(v_task.queue_name);
    else
      update sluice.step_tasks t set permanently_stalled_at = clock_timestamp()
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform sluice.exhaust_task(
        v_task.run_id, v_task.step_slug, v_task.task_index,
        format('%s, the last of %s attempts', v_error, v_candidate.max_attempts)
      );
    end if;
    v_handled := v_handled + 1;
  end loop;
  return v_handled;
end;
$$;
