-- sluice.start_flow: the producer's entry point.
-- Resolves flow_ref as an alias first, then as a concrete slug; validates the input against the
-- flow before writing anything; creates the run, its step states, and the tasks and messages of
-- every step that is ready at once.

create function sluice.start_flow(flow_ref text, input jsonb, run_id uuid default null)
returns uuid
language plpgsql
as $$
declare
  v_flow text;
  v_run_id uuid := coalesce(start_flow.run_id, gen_random_uuid());
  v_root_map text;
begin
  select a.flow_slug into v_flow from sluice.aliases a where a.alias = start_flow.flow_ref;
  if v_flow is null then
    select f.flow_slug into v_flow from sluice.flows f where f.flow_slug = start_flow.flow_ref;
  end if;
  if v_flow is null then
    raise exception 'Cannot start flow "%": no flow or alias has that name', start_flow.flow_ref
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;

  if start_flow.input is null then
    raise exception 'Cannot start flow "%": input is null; pass a JSON value', v_flow
      using errcode = 'null_value_not_allowed';
  end if;

  select s.step_slug into v_root_map
  from sluice.steps s
  where s.flow_slug = v_flow and s.step_type = 'map' and s.deps_count = 0
  order by s.step_index
  limit 1;
  if v_root_map is not null and jsonb_typeof(start_flow.input) <> 'array' then
    raise exception 'Cannot start flow "%": root map step "%" maps over the run input, which must be an array, got %',
      v_flow, v_root_map, jsonb_typeof(start_flow.input)
      using errcode = 'invalid_parameter_value';
  end if;

  if exists (select 1 from sluice.runs r where r.run_id = v_run_id) then
    raise exception 'Cannot start flow "%": run % already exists', v_flow, v_run_id
      using errcode = 'unique_violation';
  end if;

  insert into sluice.runs (run_id, flow_slug, started_via, input, remaining_steps)
  select v_run_id, v_flow, start_flow.flow_ref, start_flow.input, count(*)
  from sluice.steps s
  where s.flow_slug = v_flow;

  insert into sluice.step_states (run_id, step_slug, flow_slug, remaining_deps)
  select v_run_id, s.step_slug, s.flow_slug, s.deps_count
  from sluice.steps s
  where s.flow_slug = v_flow;

  perform sluice.start_ready_steps(v_run_id);
  return v_run_id;
end;
$$;
