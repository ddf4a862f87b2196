-- sluice.complete_step, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Marks a step completed with its aggregated output and releases its dependents.
CREATE OR REPLACE FUNCTION sluice.complete_step(run_id uuid, flow_slug text, step_slug text, output jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_map_step text;
begin
  -- A map step over this step's output cannot start from anything but an array: refuse the
  -- completion (the caller's transaction rolls back) rather than strand the dependent.
  select s.step_slug into v_map_step
  from sluice.steps s
  where s.flow_slug = complete_step.flow_slug
    and s.map_source = complete_step.step_slug
    and jsonb_typeof(complete_step.output) is distinct from 'array'
  limit 1;
  if found then
    raise exception 'Cannot complete step "%" of run %: map step "%" maps over its output, which must be an array, got %',
      complete_step.step_slug, complete_step.run_id, v_map_step,
      coalesce(jsonb_typeof(complete_step.output), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  update sluice.step_states ss
  set status = 'completed', completed_at = now(), output = complete_step.output,
    remaining_tasks = 0
  where ss.run_id = complete_step.run_id and ss.step_slug = complete_step.step_slug;

  update sluice.step_states ss
  set remaining_deps = ss.remaining_deps - 1
  from sluice.deps d
  where d.flow_slug = complete_step.flow_slug
    and d.dep_slug = complete_step.step_slug
    and ss.run_id = complete_step.run_id
    and ss.step_slug = d.step_slug
    and ss.status = 'created';

  update sluice.runs r set remaining_steps = r.remaining_steps - 1
  where r.run_id = complete_step.run_id;
end;
$$;
