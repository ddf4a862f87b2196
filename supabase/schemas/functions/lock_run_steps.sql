-- sluice.lock_run_steps, as the migrations create it (last defined in supabase/migrations/20261202000400_sluice_server_cost.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.lock_run_steps(run_ids uuid[], step_slugs text[], skip_locked_runs boolean) RETURNS SETOF sluice.step_states
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
