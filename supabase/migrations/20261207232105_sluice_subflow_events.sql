-- Subflow events (#47, docs/subflows.md#events): a child run's start and end in its PARENT run's
-- stream (child:started, child:completed, child:failed, child:cancelled, by sluice.child_event),
-- in the live events and in the replay (sluice.run_events), and a child's run:started names its
-- parent (run, step, index). sluice.start_subflow sends the starts of the children it creates;
-- the trigger runs_child_end_event (sluice.send_child_event) sends a linked child's end, in the
-- transaction that ends it, before what that end does to the parent.
-- Routines: sluice.child_event, sluice.run_event, sluice.run_events, sluice.send_child_event,
-- sluice.start_subflow (each whole, as its source under supabase/schemas/functions/ reads), then
-- the trigger, written by hand.

-- An event of a subflow child run in its PARENT run's stream (docs/subflows.md#events):
-- child:started, child:completed, child:failed or child:cancelled, naming the parent step, the
-- child's index (a map subflow's element, 0 otherwise), the child run and its concrete flow. A
-- failed child's error text is its errorMessage; the child's output and a cancel's reason stay in
-- the child's own stream (the parent's step:completed carries the outputs).
CREATE OR REPLACE FUNCTION sluice.child_event(c sluice.runs, status text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_build_object('type', 'child:' || status, 'runId', c.parent_run_id,
    'stepSlug', c.parent_step_slug, 'index', c.parent_task_index, 'childRunId', c.run_id,
    'flowSlug', c.flow_slug,
    'at', case status when 'started' then c.started_at when 'completed' then c.completed_at
      when 'failed' then c.failed_at else c.cancelled_at end)
    || case when status = 'failed' then jsonb_build_object('errorMessage', c.error_message)
      else '{}'::jsonb end
$$;

-- Events (docs/events.md): run:cancelled ends a run like run:completed and run:failed;
-- run:retried says a failed or cancelled run goes on. A subflow child's run:started names its
-- parent (run, step, index: docs/subflows.md#events); a root run's has no parent field.
CREATE OR REPLACE FUNCTION sluice.run_event(r sluice.runs, status text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'run:started', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'at', r.started_at)
      || case when r.parent_run_id is null then '{}'::jsonb
        else jsonb_build_object('parent', jsonb_build_object('runId', r.parent_run_id,
          'stepSlug', r.parent_step_slug, 'index', r.parent_task_index)) end
    when 'completed' then jsonb_build_object('type', 'run:completed', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'output', r.output, 'at', r.completed_at)
    when 'failed' then jsonb_build_object('type', 'run:failed', 'runId', r.run_id,
      'flowSlug', r.flow_slug,
      'stepSlug', (select ss.step_slug from sluice.step_states ss
        where ss.run_id = r.run_id and ss.status = 'failed' limit 1),
      'errorMessage', r.error_message, 'at', r.failed_at)
    when 'cancelled' then jsonb_build_object('type', 'run:cancelled', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'reason', r.cancel_reason, 'cancelledBy', r.cancelled_by,
      'at', r.cancelled_at)
    when 'retried' then jsonb_build_object('type', 'run:retried', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'retryCount', r.retry_count, 'retriedBy', r.retried_by,
      'at', r.retried_at)
  end;
end;
$$;

-- Trigger of a child run's end (runs_child_end_event, on a status change of a run with a parent
-- to completed, failed or cancelled): its child:completed, child:failed or child:cancelled in the
-- parent run's stream, when the parent's flow sends events. Not deferred, unlike the run's own
-- terminal event: it goes out before what the end does to the parent (its subflow step's
-- step:completed or step:failed), in the transaction that ended the child. A child that ends
-- while sluice.start_subflow creates it is not linked yet; start_subflow sends its end itself.
CREATE OR REPLACE FUNCTION sluice.send_child_event() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if (select f.opt_events from sluice.runs p join sluice.flows f on f.flow_slug = p.flow_slug
      where p.run_id = new.parent_run_id) then
    perform sluice.send_run_event(new.parent_run_id, sluice.child_event(new, new.status));
  end if;
  return null;
end;
$$;

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

-- As in migration 20261130001700, with a cancelled run's end and a retried run's last retry
-- (after the events of what it kept, before those of what it started again), each wait's
-- step:waiting, and each subflow child's child:started and end (sluice.child_event) after its
-- step's step:waiting and before its step's end, in element order.
CREATE OR REPLACE FUNCTION sluice.run_events(run_id uuid) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_agg(e.event order by e.last, e.at, e.step_index, e.stage, e.child_index)
  from sluice.runs r
  cross join lateral (
    select sluice.run_event(r, 'started') as event, false as last, r.started_at as at,
      -1 as step_index, 0 as stage, -1 as child_index
    union all
    select sluice.run_event(r, 'retried'), false, r.retried_at, -1, 0, -1
    where r.retry_count > 0
    union all
    select sluice.run_event(r, r.status), true,
      coalesce(r.completed_at, r.failed_at, r.cancelled_at), -1, 0, -1
    where r.status <> 'started'
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage, -1
    from sluice.step_states ss
    join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
    cross join lateral (
      select sluice.step_event(ss, 'started') as event, 0 as stage
      where ss.started_at is not null
      union all
      select sluice.step_event(ss, 'waiting'), 0
      where ss.waiting_at is not null
      union all
      select sluice.step_progress_event(ss, coalesce(ss.progress_sent_at, ss.started_at)), 1
      where ss.status = 'started' and ss.remaining_tasks < ss.initial_tasks
      union all
      select sluice.step_event(ss, ss.status), 3
      where ss.status not in ('created', 'started', 'waiting')
    ) x
    where ss.run_id = r.run_id
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage,
      c.parent_task_index
    from sluice.runs c
    join sluice.steps s on s.flow_slug = r.flow_slug and s.step_slug = c.parent_step_slug
    cross join lateral (
      select sluice.child_event(c, 'started') as event, 1 as stage
      union all
      select sluice.child_event(c, c.status), 2
      where c.status <> 'started'
    ) x
    where c.parent_run_id = r.run_id
  ) e
  where r.run_id = run_events.run_id
$$;

-- Not deferred (unlike runs_finished_event): a child's end goes out before its parent step's.
-- The WHEN keeps root runs from calling the function at all.
CREATE TRIGGER runs_child_end_event AFTER UPDATE OF status ON sluice.runs FOR EACH ROW WHEN ((new.parent_run_id IS NOT NULL) AND (old.status IS DISTINCT FROM new.status) AND (new.status <> 'started'::text)) EXECUTE FUNCTION sluice.send_child_event();

-- New routines: no role but sluice's own may call them until granted (grant_access grants every
-- routine of the schema to the roles it is given).
revoke all on function sluice.child_event(sluice.runs, text) from public;
revoke all on function sluice.send_child_event() from public;
