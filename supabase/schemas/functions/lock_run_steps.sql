-- sluice.lock_run_steps, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.lock_run_steps(run_ids uuid[], step_slugs text[], skip_locked_runs boolean) RETURNS SETOF sluice.step_states
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_runs uuid[];
  v_ancestors uuid[] := '{}';
  v_locked uuid[];
begin
  -- A subflow child's runs are locked with their ancestors, root first: (depth, run_id) order,
  -- which is run_id order for runs without a parent (sluice.lock_run_ancestors).
  if exists (
    select 1 from sluice.runs r
    where r.run_id = any (lock_run_steps.run_ids) and r.parent_run_id is not null
  ) then
    v_ancestors := sluice.run_ancestors(lock_run_steps.run_ids);
  end if;
  if skip_locked_runs then
    select array_agg(r.run_id), array_agg(r.run_id) filter (
        where r.status = 'started' and r.run_id = any (lock_run_steps.run_ids))
    into v_locked, v_runs
    from (
      select r.run_id, r.status from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids || v_ancestors)
        and (r.status = 'started' or r.run_id = any (v_ancestors))
      order by r.depth, r.run_id
      for update skip locked
    ) r;
    -- A run whose ancestor is locked elsewhere is skipped too: its end would change that one.
    if cardinality(v_ancestors) > 0 then
      select array_agg(x.run_id) into v_runs
      from unnest(v_runs) as x(run_id)
      where sluice.run_ancestors(array[x.run_id]) <@ v_locked;
    end if;
  else
    select array_agg(r.run_id) filter (
        where r.status = 'started' and r.run_id = any (lock_run_steps.run_ids))
    into v_runs
    from (
      select r.run_id, r.status from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids || v_ancestors)
        and (r.status = 'started' or r.run_id = any (v_ancestors))
      order by r.depth, r.run_id
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
