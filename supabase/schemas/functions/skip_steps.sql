-- sluice.skip_steps, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130000400, with waiting steps (a signal wait that timed out is skipped).
CREATE OR REPLACE FUNCTION sluice.skip_steps(run_id uuid, flow_slug text, step_slug text, skip_reason text, cascade_dependents boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_skipped text[];
begin
  with recursive targets as (
    select skip_steps.step_slug as slug
    union
    select d.step_slug
    from sluice.deps d
    join targets t on d.dep_slug = t.slug
    where cascade_dependents and d.flow_slug = skip_steps.flow_slug
  ),
  skipped as (
    update sluice.step_states ss
    set status = 'skipped', skipped_at = now(),
      skip_reason = case
        when ss.step_slug = skip_steps.step_slug then skip_steps.skip_reason
        else 'dependency_skipped'
      end
    where ss.run_id = skip_steps.run_id
      and ss.step_slug in (select slug from targets)
      and ss.status in ('created', 'started', 'waiting')
    returning ss.step_slug
  )
  select array_agg(s.step_slug) into v_skipped from skipped s;

  if v_skipped is null then
    return;
  end if;

  perform sluice.terminate_tasks(skip_steps.run_id, v_skipped, 'skipped');

  update sluice.step_states ss
  set remaining_deps = ss.remaining_deps - released.n
  from (
    select d.step_slug, count(*)::integer as n
    from sluice.deps d
    where d.flow_slug = skip_steps.flow_slug
      and d.dep_slug = any (v_skipped)
      and not (d.step_slug = any (v_skipped))
    group by d.step_slug
  ) released
  where ss.run_id = skip_steps.run_id
    and ss.step_slug = released.step_slug
    and ss.status = 'created';

  update sluice.runs r set remaining_steps = r.remaining_steps - cardinality(v_skipped)
  where r.run_id = skip_steps.run_id;
end;
$$;
