-- sluice.fail_run, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Fails the run at step_slug (the other unfinished steps are cancelled, their tasks terminated).
-- Subflows: the run's live children are cancelled, and a child's failure fails its parent's
-- waiting subflow step (sluice.subflow_child_error), up the tree.
CREATE OR REPLACE FUNCTION sluice.fail_run(run_id uuid, step_slug text, error_message text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run sluice.runs;
  v_children uuid[];
begin
  update sluice.runs r
  set status = 'failed', failed_at = now(), error_message = fail_run.error_message
  where r.run_id = fail_run.run_id and r.status = 'started'
  returning * into v_run;

  update sluice.step_states ss
  set status = case when ss.step_slug = fail_run.step_slug then 'failed' else 'cancelled' end,
    failed_at = case when ss.step_slug = fail_run.step_slug then now() end,
    cancelled_at = case when ss.step_slug = fail_run.step_slug then null else now() end,
    error_message = case
      when ss.step_slug = fail_run.step_slug then fail_run.error_message
      else ss.error_message
    end
  where ss.run_id = fail_run.run_id and ss.status in ('created', 'started', 'waiting');

  perform sluice.terminate_tasks(fail_run.run_id, null, 'cancelled');

  if v_run.run_id is null then
    return;
  end if;
  -- Its live children (of any subflow step) are cancelled with it: their parent steps no longer
  -- wait, so their cancel leaves this run as it is.
  select array_agg(r.run_id order by r.run_id) into v_children
  from sluice.runs r where r.parent_run_id = fail_run.run_id and r.status = 'started';
  if v_children is not null then
    perform sluice.cancel_run_set(v_children,
      left(format('parent run %s failed', fail_run.run_id), sluice.max_cancel_reason_length()));
  end if;
  -- A failed child fails its parent's waiting subflow step, and so the parent run.
  if v_run.parent_run_id is not null then
    perform 1 from sluice.runs r where r.run_id = v_run.parent_run_id for update;
    if exists (
      select 1 from sluice.step_states ss
      where ss.run_id = v_run.parent_run_id and ss.step_slug = v_run.parent_step_slug
        and ss.status = 'waiting'
    ) then
      perform sluice.fail_run(v_run.parent_run_id, v_run.parent_step_slug,
        sluice.subflow_child_error(v_run));
    end if;
  end if;
end;
$$;
