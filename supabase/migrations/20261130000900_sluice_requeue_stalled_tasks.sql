-- sluice.requeue_stalled_tasks: recovers tasks whose worker vanished.
--
-- A task is stalled when it has been 'started' for longer than its effective timeout
-- (coalesce(step, flow)) + 30 s: a live worker would have aborted and reported it by then.
-- It is requeued (visible at once) up to 3 times; after that it is marked permanently stalled
-- and fails like an exhausted task, so the run still terminates.
--
-- Safe to call from every worker's heartbeat at once: runs are locked with skip locked, so a
-- run another caller (or a completion) holds is simply left for the next call. Lock order
-- run -> step state -> task -> message, as everywhere.

create function sluice.max_stalled_requeues()
returns integer
language sql
immutable
as $$ select 3 $$;

create function sluice.requeue_stalled_tasks()
returns integer
language plpgsql
as $$
declare
  v_candidate record;
  v_task sluice.step_tasks;
  v_handled integer := 0;
begin
  for v_candidate in
    select t.run_id, t.step_slug, t.task_index,
      make_interval(secs => coalesce(s.opt_timeout, f.opt_timeout) + 30) as stall_after
    from sluice.step_tasks t
    join sluice.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
    join sluice.flows f on f.flow_slug = t.flow_slug
    where t.status = 'started' and t.started_at is not null
      and t.started_at < now() - make_interval(secs => coalesce(s.opt_timeout, f.opt_timeout) + 30)
    order by t.started_at
    limit 100
  loop
    perform 1 from sluice.runs r
    where r.run_id = v_candidate.run_id and r.status = 'started'
    for update skip locked;
    continue when not found;

    perform 1 from sluice.step_states ss
    where ss.run_id = v_candidate.run_id and ss.step_slug = v_candidate.step_slug
    for update;

    select * into v_task from sluice.step_tasks t
    where t.run_id = v_candidate.run_id and t.step_slug = v_candidate.step_slug
      and t.task_index = v_candidate.task_index
    for update;
    continue when v_task.status <> 'started'
      or v_task.started_at >= now() - v_candidate.stall_after;

    if v_task.requeued_count < sluice.max_stalled_requeues() then
      update sluice.step_tasks t
      set status = 'queued', requeued_count = t.requeued_count + 1,
        error_message = format('stalled: no report within %s', v_candidate.stall_after)
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform pgmq.set_vt(v_task.queue_name, v_task.message_id, 0);
      perform sluice.notify_queue(v_task.queue_name);
    else
      update sluice.step_tasks t set permanently_stalled_at = now()
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform sluice.exhaust_task(
        v_task.run_id, v_task.step_slug, v_task.task_index,
        format('stalled %s times: no report within %s', v_task.requeued_count + 1,
          v_candidate.stall_after)
      );
    end if;
    v_handled := v_handled + 1;
  end loop;
  return v_handled;
end;
$$;
