-- sluice.start_subflow, as the migrations create it (last defined in supabase/migrations/20261207232105_sluice_subflow_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Starts a ready subflow step (called by sluice.begin_wait, which holds the run's lock): the step
-- moves to 'waiting' (step:waiting) and, in this same transaction, its child runs start, one for a
-- subflow, one per element of the child input array for a map subflow (task index = element
-- index), each recording its parent (parent_run_id, parent_step_slug, parent_task_index) and its
-- depth. The unique index on the parent triple keeps one child per index whatever calls this.
-- A child started before for the same index (the step is retried: sluice.retry_run of the parent)
-- is taken as it is, and retried when it failed or was cancelled, so a retry re-runs only what
-- failed below it. A child started by alias runs the alias's current flow. The step completes at
-- once when every child is complete already (an empty map: []), and fails the run when a child
-- ended failed or cancelled at its start. Limits (SLL01): the depth of the tree
-- (sluice.max_subflow_depth) and a map subflow's children (the flow's max_map_tasks).
-- Events (docs/subflows.md#events): the children it creates send child:started to the parent's
-- stream after the step's step:waiting (and their end, when they ended at their creation, which
-- sluice.send_child_event cannot see: they were not linked yet); a retried child's end comes
-- from sluice.send_child_event.
CREATE OR REPLACE FUNCTION sluice.start_subflow(run_id uuid, flow_slug text, step_slug text, wait_options jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_state sluice.step_states;
  v_ref text := start_subflow.wait_options #>> '{subflow,flow}';
  v_map boolean := (start_subflow.wait_options #> '{subflow,map}') = 'true'::jsonb;
  v_child_flow text;
  v_depth integer;
  v_inputs jsonb;
  v_count integer;
  v_max integer;
  v_i integer;
  v_child sluice.runs;
  v_child_id uuid;
  v_remaining integer := 0;
  v_created sluice.runs[] := '{}';
  v_failed sluice.runs;
begin
  select * into v_state from sluice.step_states ss
  where ss.run_id = start_subflow.run_id and ss.step_slug = start_subflow.step_slug;
  if v_state.wait_input is null then
    raise exception 'Cannot start subflow step "%" of run %: it has no child input (its dependency completed without one)',
      start_subflow.step_slug, start_subflow.run_id
      using errcode = 'invalid_parameter_value';
  end if;

  if start_subflow.wait_options #>> '{subflow,by}' = 'alias' then
    select a.flow_slug into v_child_flow from sluice.aliases a where a.alias = v_ref;
  else
    select f.flow_slug into v_child_flow from sluice.flows f where f.flow_slug = v_ref;
  end if;
  if v_child_flow is null then
    raise exception 'Cannot start subflow step "%" of run %: no % "%" is compiled',
      start_subflow.step_slug, start_subflow.run_id,
      case when start_subflow.wait_options #>> '{subflow,by}' = 'alias' then 'alias'
        else 'flow' end, v_ref
      using errcode = 'no_data_found',
        hint = 'The child flow was deleted after the parent compiled; compile it again';
  end if;

  select r.depth + 1 into v_depth from sluice.runs r where r.run_id = start_subflow.run_id;
  if v_depth > sluice.max_subflow_depth() then
    raise exception 'Cannot start subflow step "%" of run %: its child would be % levels deep, more than the limit of % (max_subflow_depth)',
      start_subflow.step_slug, start_subflow.run_id, v_depth, sluice.max_subflow_depth()
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_subflow_depth',
        'size', v_depth, 'max', sluice.max_subflow_depth())::text;
  end if;

  if v_map then
    if jsonb_typeof(v_state.wait_input) is distinct from 'array' then
      raise exception 'Cannot start map subflow step "%" of run %: its child input must be an array, got %',
        start_subflow.step_slug, start_subflow.run_id, jsonb_typeof(v_state.wait_input)
        using errcode = 'invalid_parameter_value';
    end if;
    v_inputs := v_state.wait_input;
    v_count := jsonb_array_length(v_inputs);
    select f.opt_max_map_tasks into v_max from sluice.flows f
    where f.flow_slug = start_subflow.flow_slug;
    if v_count > v_max then
      raise exception 'Cannot start map subflow step "%" of run %: it maps over % elements, more than the limit of % children (max_map_tasks)',
        start_subflow.step_slug, start_subflow.run_id, v_count, v_max
        using errcode = 'SLL01', detail = json_build_object('limit', 'max_map_tasks',
          'size', v_count, 'max', v_max)::text;
    end if;
  else
    v_inputs := jsonb_build_array(v_state.wait_input);
    v_count := 1;
  end if;

  -- The step waits only once its children are there: a child that ends while this starts it
  -- (at its creation or its retry) ends with a parent step that does not wait yet, so its end is
  -- counted here, not by sluice.end_subflow_child.
  for v_i in 0 .. v_count - 1 loop
    select * into v_child from sluice.runs r
    where r.parent_run_id = start_subflow.run_id and r.parent_step_slug = start_subflow.step_slug
      and r.parent_task_index = v_i;
    if not found then
      v_child_id := sluice.create_run(v_child_flow, v_ref, v_inputs -> v_i, null);
      update sluice.runs r
      set parent_run_id = start_subflow.run_id, parent_step_slug = start_subflow.step_slug,
        parent_task_index = v_i, depth = v_depth
      where r.run_id = v_child_id
      returning * into v_child;
      v_created := v_created || v_child;
    elsif v_child.status in ('failed', 'cancelled') then
      -- The parent's retry goes on below it: the child's own retry re-runs only what failed.
      perform sluice.retry_run(v_child.run_id, true);
      select * into v_child from sluice.runs r where r.run_id = v_child.run_id;
    end if;
    if v_child.status in ('failed', 'cancelled') then
      v_failed := v_child;
      exit;
    end if;
    if v_child.status <> 'completed' then
      v_remaining := v_remaining + 1;
    end if;
  end loop;

  if v_failed.run_id is null then
    update sluice.step_states ss
    set status = 'waiting', waiting_at = now(), initial_tasks = v_count,
      remaining_tasks = v_remaining
    where ss.run_id = start_subflow.run_id and ss.step_slug = start_subflow.step_slug;
  end if;
  if cardinality(v_created) > 0
    and (select f.opt_events from sluice.flows f where f.flow_slug = start_subflow.flow_slug)
  then
    -- One child at a time, in element order (the order they were created in): each child's
    -- start, then its end if it ended at its creation. The rows as created: no query per start.
    foreach v_child in array v_created loop
      perform sluice.send_run_event(start_subflow.run_id, sluice.child_event(v_child, 'started'));
      if v_child.status <> 'started' then
        perform sluice.send_run_event(start_subflow.run_id,
          sluice.child_event(v_child, v_child.status));
      end if;
    end loop;
  end if;
  if v_failed.run_id is not null then
    perform sluice.fail_run(start_subflow.run_id, start_subflow.step_slug,
      sluice.subflow_child_error(v_failed));
    return;
  end if;
  if v_remaining = 0 then
    perform sluice.complete_step(start_subflow.run_id, start_subflow.flow_slug,
      start_subflow.step_slug, sluice.subflow_output(start_subflow.run_id,
        start_subflow.step_slug, v_map));
  end if;
end;
$$;
