-- sluice.exhaust_task, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A task ran out of attempts (or stalled too often): it fails, its message is archived, and the
-- step's when_exhausted decides between failing the run and skipping the step.
CREATE OR REPLACE FUNCTION sluice.exhaust_task(run_id uuid, step_slug text, task_index integer, error_message text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_task sluice.step_tasks;
  v_when text;
begin
  update sluice.step_tasks t
  set status = 'failed', failed_at = now(), error_message = exhaust_task.error_message
  where t.run_id = exhaust_task.run_id
    and t.step_slug = exhaust_task.step_slug
    and t.task_index = exhaust_task.task_index
  returning t.* into v_task;

  perform sluice.archive_messages(array[v_task.queue_name], array[v_task.message_id]);

  select s.when_exhausted into v_when
  from sluice.steps s
  where s.flow_slug = v_task.flow_slug and s.step_slug = v_task.step_slug;

  if v_when = 'fail' then
    perform sluice.fail_run(
      exhaust_task.run_id, exhaust_task.step_slug,
      format('step "%s" task %s failed: %s', exhaust_task.step_slug, exhaust_task.task_index,
        exhaust_task.error_message)
    );
  else
    update sluice.step_states ss set error_message = exhaust_task.error_message
    where ss.run_id = exhaust_task.run_id and ss.step_slug = exhaust_task.step_slug;
    perform sluice.skip_steps(
      exhaust_task.run_id, v_task.flow_slug, exhaust_task.step_slug, 'retries_exhausted',
      v_when = 'skip-cascade'
    );
    perform sluice.start_ready_steps(exhaust_task.run_id);
  end if;
end;
$$;
