-- sluice.lock_run_steps: the first two rungs of the lock ladder every report and recovery climbs
-- before it changes a task (the global order runs -> step_states -> step_tasks -> PGMQ message
-- rows of 20261130000200_sluice_runtime_tables.sql).
--
-- Given (run, step) pairs (run_ids[i] with step_slugs[i]; repeats are fine), it locks the
-- started runs among them ordered by run_id, so two callers with overlapping sets cannot
-- deadlock, then the pairs' step states of those runs ordered by (run_id, step_slug), and returns
-- those step states as locked (so their counters are current). A run that is not started is left
-- alone and none of its step states is returned. With skip_locked_runs a run another transaction
-- holds is skipped too (stalled recovery leaves it for its next call); otherwise the caller
-- waits for it. The caller then locks the tasks it changes (the third rung) with its own
-- condition: the live attempt's fencing token for a report, 'started' for recovery.

create function sluice.lock_run_steps(
  run_ids uuid[],
  step_slugs text[],
  skip_locked_runs boolean
)
returns setof sluice.step_states
language plpgsql
as $$
declare
  v_runs uuid[];
begin
  if skip_locked_runs then
    select array_agg(r.run_id) into v_runs
    from (
      select r.run_id from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids) and r.status = 'started'
      order by r.run_id
      for update skip locked
    ) r;
  else
    select array_agg(r.run_id) into v_runs
    from (
      select r.run_id from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids) and r.status = 'started'
      order by r.run_id
      for update
    ) r;
  end if;

  -- Rows are locked after the sort, so in (run_id, step_slug) order.
  return query
    select ss.* from sluice.step_states ss
    where ss.run_id = any (v_runs)
      and (ss.run_id, ss.step_slug) in (
        select k.run_id, k.step_slug
        from unnest(lock_run_steps.run_ids, lock_run_steps.step_slugs) as k(run_id, step_slug)
      )
    order by ss.run_id, ss.step_slug
    for update of ss;
end;
$$;
