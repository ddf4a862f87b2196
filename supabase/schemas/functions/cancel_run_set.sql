-- sluice.cancel_run_set, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Cancels the runs among run_ids that are still started: the runs, then their unfinished step
-- states (waiting ones included), then their queued and started tasks, then those tasks' messages
-- (archived on each task's own queue). Returns one row per run it cancelled with the number of
-- tasks it cancelled. A started task's attempt is fenced by the change: its report is stale, and
-- its worker learns of it at its next heartbeat (sluice.heartbeat_worker with its running tasks).
--
-- Lock order: the run rows first, ordered by run_id, in the first statement; then step states
-- and tasks of those runs only, then messages: the global ladder. Every other writer of these
-- step states and tasks holds their run's lock first, so the order within a rung does not matter.
-- A run that finished while this waited for its lock is re-checked and left out; the statements
-- after the first one see every task its former holder created.
-- Subflows: the runs' ancestors are locked with them, root first ((depth, run_id) order, as
-- sluice.lock_run_ancestors); their live children are cancelled with the same reason (down the
-- tree); a cancelled child whose parent step waits fails that step (sluice.subflow_child_error),
-- and so its parent run. Rows are returned for the runs of run_ids only.
CREATE OR REPLACE FUNCTION sluice.cancel_run_set(run_ids uuid[], reason text) RETURNS TABLE(cancelled_run_id uuid, cancelled_tasks integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_runs uuid[];
  v_task_runs uuid[];
  v_queues text[];
  v_ids bigint[];
  v_ancestors uuid[] := '{}';
  v_children uuid[];
  v_child sluice.runs;
begin
  if exists (
    select 1 from sluice.runs r
    where r.run_id = any (cancel_run_set.run_ids) and r.parent_run_id is not null
  ) then
    v_ancestors := sluice.run_ancestors(cancel_run_set.run_ids);
  end if;
  select array_agg(l.run_id order by l.run_id) into v_runs
  from (
    select r.run_id, r.status from sluice.runs r
    where r.run_id = any (cancel_run_set.run_ids || v_ancestors)
      and (r.status = 'started' or r.run_id = any (v_ancestors))
    order by r.depth, r.run_id
    for update
  ) l
  where l.status = 'started' and l.run_id = any (cancel_run_set.run_ids);
  if v_runs is null then
    return;
  end if;

  -- From here on every statement's snapshot is taken with the run locks held.
  update sluice.runs r
  set status = 'cancelled', cancelled_at = now(), cancel_reason = cancel_run_set.reason,
    cancelled_by = current_user
  where r.run_id = any (v_runs);

  update sluice.step_states ss
  set status = 'cancelled', cancelled_at = now()
  where ss.run_id = any (v_runs) and ss.status in ('created', 'started', 'waiting');

  with tasks_cancelled as (
    update sluice.step_tasks t
    set status = 'cancelled', cancelled_at = now()
    where t.run_id = any (v_runs) and t.status in ('queued', 'started')
    returning t.run_id, t.queue_name, t.message_id
  )
  select array_agg(t.run_id), array_agg(t.queue_name), array_agg(t.message_id)
  into v_task_runs, v_queues, v_ids
  from tasks_cancelled t;
  if array_remove(v_ids, null) <> '{}' then
    perform sluice.archive_messages(v_queues, v_ids);
  end if;

  select array_agg(r.run_id order by r.run_id) into v_children
  from sluice.runs r where r.parent_run_id = any (v_runs) and r.status = 'started';
  if v_children is not null then
    perform sluice.cancel_run_set(v_children, cancel_run_set.reason);
  end if;
  if cardinality(v_ancestors) > 0 then
    for v_child in
      select r.* from sluice.runs r
      join sluice.step_states ss on ss.run_id = r.parent_run_id
        and ss.step_slug = r.parent_step_slug and ss.status = 'waiting'
      where r.run_id = any (v_runs)
      order by r.run_id
    loop
      -- A sibling's failure earlier in this loop may have ended the step already.
      continue when not exists (
        select 1 from sluice.step_states ss
        where ss.run_id = v_child.parent_run_id and ss.step_slug = v_child.parent_step_slug
          and ss.status = 'waiting'
      );
      perform sluice.fail_run(v_child.parent_run_id, v_child.parent_step_slug,
        sluice.subflow_child_error(v_child));
    end loop;
  end if;

  return query
    select c.run_id, coalesce(n.tasks, 0)
    from unnest(v_runs) as c(run_id)
    left join (
      select x.run_id, count(*)::integer as tasks from unnest(v_task_runs) as x(run_id)
      group by x.run_id
    ) n on n.run_id = c.run_id
    order by c.run_id;
end;
$$;
