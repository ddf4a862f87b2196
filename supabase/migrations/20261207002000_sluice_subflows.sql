-- Subflows (#47, docs/subflows.md): a subflow step starts child runs of another flow in the
-- transaction that starts the step and waits for them like a durable wait (no task, no message,
-- no worker); the child's end completes or fails the step in the child's final transaction.
--
-- A child run records its parent (parent_run_id, parent_step_slug, parent_task_index: the element
-- of a map subflow, 0 otherwise) and its depth (0 for a root run). The unique index on the parent
-- triple is the backstop of "exactly one child per step and index": start_subflow, the only
-- writer, runs under the parent run's lock, and a retried step takes the child it had.
-- Lock order of a tree: root first, (depth, run_id) order (sluice.lock_run_ancestors); for runs
-- with no parent this is the run_id order every run locker already used.

alter table sluice.runs
  add column parent_run_id uuid,
  add column parent_step_slug text,
  add column parent_task_index integer,
  add column depth integer not null default 0,
  add constraint runs_parent_check check (
    num_nonnulls(parent_run_id, parent_step_slug, parent_task_index) in (0, 3)
    and (parent_run_id is null) = (depth = 0)),
  add constraint runs_depth_check check (depth >= 0),
  add constraint runs_parent_task_index_check check (parent_task_index >= 0);

comment on column sluice.runs.parent_run_id is
  'The run whose subflow step started this run (null for a run started by a producer).';
comment on column sluice.runs.parent_task_index is
  'The element of the parent''s map subflow this run is the child of (0 for a subflow).';
comment on column sluice.runs.depth is
  'How many subflow levels are above this run: 0 for a root run (sluice.max_subflow_depth).';

create unique index runs_parent_key on sluice.runs (parent_run_id, parent_step_slug,
  parent_task_index) where parent_run_id is not null;

alter table sluice.step_states add column wait_input jsonb;

comment on column sluice.step_states.wait_input is
  'A subflow step''s child input (a map subflow''s: the array of its children''s inputs), computed by the worker that completed its dependency.';

alter table sluice.steps
  drop constraint steps_step_type_check,
  drop constraint steps_wait_options_check,
  add constraint steps_step_type_check check (
    step_type = any (array['single', 'map', 'sleep', 'signal', 'subflow'])),
  add constraint steps_wait_options_check check (
    (step_type = any (array['sleep', 'signal', 'subflow'])) = (wait_options is not null));

create or replace view sluice.route_coverage as
 SELECT s.flow_slug,
    s.step_slug,
    s.step_index,
    s.queue_name,
    (count(w.worker_id))::integer AS live_workers,
    max(w.last_heartbeat_at) AS last_heartbeat_at,
    ( SELECT (count(*))::integer AS count
           FROM sluice.step_tasks t
          WHERE ((t.flow_slug = s.flow_slug) AND (t.step_slug = s.step_slug) AND (t.status = 'queued'::text))) AS queued_tasks,
    (count(w.worker_id) = 0) AS missing_worker
   FROM (sluice.steps s
     LEFT JOIN sluice.live_workers w ON (((w.queue_name = s.queue_name) AND (w.flow_slug = s.flow_slug) AND ((w.step_slug IS NULL) OR (w.step_slug = s.step_slug)))))
  WHERE (s.step_type <> ALL (ARRAY['sleep'::text, 'signal'::text, 'subflow'::text]))
  GROUP BY s.flow_slug, s.step_slug, s.step_index, s.queue_name;

-- How deep a tree of subflows may grow: a root run is at depth 0, its children at 1. A child
-- deeper than this is refused (SLL01), which also stops a flow that starts itself through
-- an alias.
create or replace function sluice.max_subflow_depth()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 8 $$;

-- The ancestors of run_ids: their parent runs (subflows), the parents' parents, and so on.
create or replace function sluice.run_ancestors(run_ids uuid[])
returns uuid[]
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
  with recursive a(run_id) as (
    select r.parent_run_id from sluice.runs r
    where r.run_id = any (run_ancestors.run_ids) and r.parent_run_id is not null
    union
    select r.parent_run_id from sluice.runs r
    join a on r.run_id = a.run_id
    where r.parent_run_id is not null
  )
  select coalesce(array_agg(a.run_id), '{}') from a
$$;

-- Locks the ancestors of run_ids (sluice.run_ancestors), root first ((depth, run_id) order): the
-- lock order of a tree of subflows, whose runs are always locked from the root down, so a child's
-- end (which changes its parent) and its parent's cancel (which changes the child) never wait on
-- each other in a cycle. A no-op for runs with no parent.
create or replace function sluice.lock_run_ancestors(run_ids uuid[])
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if exists (
    select 1 from sluice.runs r
    where r.run_id = any (lock_run_ancestors.run_ids) and r.parent_run_id is not null
  ) then
    perform 1 from (
      select r.run_id from sluice.runs r
      where r.run_id = any (sluice.run_ancestors(lock_run_ancestors.run_ids))
      order by r.depth, r.run_id
      for update
    ) l;
  end if;
end;
$$;

-- The output of a subflow step whose children all completed: the child run's output, or for a
-- map subflow the array of its children's outputs in element order.
create or replace function sluice.subflow_output(run_id uuid, step_slug text, map boolean)
returns jsonb
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
  select case when subflow_output.map
    then coalesce(jsonb_agg(r.output order by r.parent_task_index), '[]'::jsonb)
    else (array_agg(r.output))[1]
  end
  from sluice.runs r
  where r.parent_run_id = subflow_output.run_id and r.parent_step_slug = subflow_output.step_slug
$$;

-- The error of a subflow step whose child failed or was cancelled: names the child run, its flow,
-- its index (a map subflow's element) and why it ended.
create or replace function sluice.subflow_child_error(child sluice.runs)
returns text
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
  select format('child run %s (flow "%s"%s) of subflow step "%s" %s',
    child.run_id, child.flow_slug,
    case when s.wait_options #> '{subflow,map}' = 'true'::jsonb
      then format(', index %s', child.parent_task_index) else '' end,
    child.parent_step_slug,
    case child.status
      when 'cancelled' then 'was cancelled' || coalesce(': ' || child.cancel_reason, '')
      else 'failed: ' || coalesce(child.error_message, 'no error message')
    end)
  from sluice.runs p
  join sluice.steps s on s.flow_slug = p.flow_slug and s.step_slug = child.parent_step_slug
  where p.run_id = child.parent_run_id
$$;

-- Refuses, at compile time of the parent, a subflow step whose child is not compiled: by slug,
-- no such flow; by alias, no such alias (a child's end would otherwise surface only when a run
-- reaches the step). Other steps pass.
create or replace function sluice.check_subflow_child(flow_slug text, step jsonb)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ref text := step #>> '{wait,subflow,flow}';
begin
  if step ->> 'step_type' is distinct from 'subflow' then
    return;
  end if;
  if step #>> '{wait,subflow,by}' = 'alias'
    and not exists (select 1 from sluice.aliases a where a.alias = v_ref)
  then
    raise exception 'Cannot compile flow "%": subflow step "%" starts its child by the alias "%", which no compiled flow has',
      check_subflow_child.flow_slug, step ->> 'step_slug', v_ref
      using errcode = 'invalid_parameter_value',
        hint = 'Compile (deploy) the child flow first: its worker compiles it when it starts';
  end if;
  if step #>> '{wait,subflow,by}' = 'slug'
    and not exists (select 1 from sluice.flows f where f.flow_slug = v_ref)
  then
    raise exception 'Cannot compile flow "%": subflow step "%" starts the flow "%", which is not compiled',
      check_subflow_child.flow_slug, step ->> 'step_slug', v_ref
      using errcode = 'invalid_parameter_value',
        hint = 'Compile (deploy) the child flow first: its worker compiles it when it starts';
  end if;
end;
$$;

-- As in 20261202000300, and a signal wait's accept_signals_sent_before_run is a boolean or absent;
-- a subflow step waits like the others and its wait names its child: {subflow: {flow, by, map}}.
CREATE OR REPLACE FUNCTION sluice.validate_wait_step(flow_slug text, step jsonb, earlier_slugs text[], earlier_types text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_slug text := step ->> 'step_slug';
  v_type text := step ->> 'step_type';
  v_dep text;
  v_dep_type text;
begin
  if v_type not in ('sleep', 'signal', 'subflow') then
    if coalesce(step -> 'wait', 'null'::jsonb) <> 'null'::jsonb then
      raise exception 'Invalid flow definition: step "%" of flow "%" is a % step, which takes no wait options, got %',
        v_slug, flow_slug, v_type, step -> 'wait'
        using errcode = 'invalid_parameter_value';
    end if;
    return;
  end if;
  if jsonb_array_length(step -> 'deps') <> 1 then
    raise exception 'Invalid flow definition: % step "%" of flow "%" must depend on exactly one step, got deps %',
      v_type, v_slug, flow_slug, step -> 'deps'
      using errcode = 'invalid_parameter_value';
  end if;
  v_dep := step -> 'deps' ->> 0;
  v_dep_type := earlier_types[array_position(earlier_slugs, v_dep)];
  if v_dep_type is distinct from 'single' then
    raise exception 'Invalid flow definition: % step "%" of flow "%" depends on "%", a % step; a wait depends on one single handler step (its worker computes the wait)',
      v_type, v_slug, flow_slug, v_dep, v_dep_type
      using errcode = 'invalid_parameter_value';
  end if;
  if coalesce(step -> 'required_input_pattern', 'null'::jsonb) <> 'null'::jsonb
    or coalesce(step -> 'forbidden_input_pattern', 'null'::jsonb) <> 'null'::jsonb
  then
    raise exception 'Invalid flow definition: % step "%" of flow "%" cannot have a condition',
      v_type, v_slug, flow_slug
      using errcode = 'invalid_parameter_value';
  end if;
  if v_type = 'signal' then
    perform sluice.check_whole_number(step #> '{wait,timeout_seconds}', 1,
      format('wait.timeout_seconds of step "%s"', v_slug));
    perform sluice.check_enum(coalesce(step #> '{wait,on_timeout}', '"fail"'::jsonb),
      array['fail', 'skip', 'value'], format('wait.on_timeout of step "%s"', v_slug));
    if coalesce(jsonb_typeof(step #> '{wait,accept_signals_sent_before_run}'), 'boolean')
      <> 'boolean'
    then
      raise exception 'Invalid flow definition: wait.accept_signals_sent_before_run of step "%" of flow "%" must be a boolean, got %',
        v_slug, flow_slug, step #> '{wait,accept_signals_sent_before_run}'
        using errcode = 'invalid_parameter_value';
    end if;
  elsif v_type = 'subflow' then
    if jsonb_typeof(step #> '{wait,subflow}') is distinct from 'object'
      or jsonb_typeof(step #> '{wait,subflow,flow}') is distinct from 'string'
      or not sluice.is_valid_slug(step #>> '{wait,subflow,flow}')
      or coalesce(step #>> '{wait,subflow,by}', '') not in ('alias', 'slug')
      or jsonb_typeof(step #> '{wait,subflow,map}') is distinct from 'boolean'
      or (select count(*) from jsonb_object_keys(step -> 'wait')) <> 1
    then
      raise exception 'Invalid flow definition: wait of subflow step "%" of flow "%" must be {"subflow": {"flow": <slug>, "by": "alias" | "slug", "map": <boolean>}}, got %',
        v_slug, flow_slug, coalesce(step -> 'wait', 'null'::jsonb)
        using errcode = 'invalid_parameter_value';
    end if;
    if step #>> '{wait,subflow,by}' = 'slug' and step #>> '{wait,subflow,flow}' = flow_slug then
      raise exception 'Invalid flow definition: subflow step "%" of flow "%" starts its own flow',
        v_slug, flow_slug
        using errcode = 'invalid_parameter_value';
    end if;
  elsif coalesce(step -> 'wait', 'null'::jsonb) not in ('null'::jsonb, '{}'::jsonb) then
    raise exception 'Invalid flow definition: sleep step "%" of flow "%" takes no wait options, got %',
      v_slug, flow_slug, step -> 'wait'
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- A wait step's options in the shape (null for a handler step), defaults filled in; a subflow's
-- names its child ({subflow: {flow, by, map}}). A signal
-- wait that accepts signals sent before its run started carries accept_signals_sent_before_run
-- (only then: the shape of every other flow stays what it was).
CREATE OR REPLACE FUNCTION sluice.wait_options(step jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case step ->> 'step_type'
    when 'sleep' then '{}'::jsonb
    when 'subflow' then jsonb_build_object('subflow', step #> '{wait,subflow}')
    when 'signal' then jsonb_build_object(
      'timeout_seconds', coalesce(step #> '{wait,timeout_seconds}', 'null'::jsonb),
      'on_timeout', coalesce(step #>> '{wait,on_timeout}', 'fail'),
      'timeout_value', coalesce(step #> '{wait,timeout_value}', 'null'::jsonb))
      || case when step #> '{wait,accept_signals_sent_before_run}' = 'true'::jsonb
        then '{"accept_signals_sent_before_run": true}'::jsonb else '{}'::jsonb end
  end
$$;

CREATE OR REPLACE FUNCTION sluice.validate_definition(definition jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text := definition ->> 'flow_slug';
  v_mode text := definition ->> 'queue_mode';
  v_step jsonb;
  v_route jsonb;
  v_dep jsonb;
  v_i integer := 0;
  v_slug text;
  v_slugs text[] := '{}';
  v_lower text[] := '{}';
  v_types text[] := '{}';
  v_deps text[];
  v_pattern text;
begin
  if jsonb_typeof(definition) is distinct from 'object' then
    raise exception 'Invalid flow definition: expected a JSON object, got %',
      coalesce(jsonb_typeof(definition), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if jsonb_typeof(definition -> 'flow_slug') is distinct from 'string'
    or not sluice.is_valid_slug(v_flow)
  then
    raise exception 'Invalid flow definition: flow_slug % is not a valid slug (a letter first, then letters, digits and single underscores, no trailing underscore, at most 128 characters)',
      coalesce((definition -> 'flow_slug')::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_enum(coalesce(definition -> 'queue_mode', 'null'),
    array['flow', 'step', 'routed'], format('queue_mode of flow "%s"', v_flow));
  perform sluice.check_whole_number(definition #> '{options,max_attempts}', 1,
    format('options.max_attempts of flow "%s"', v_flow));
  perform sluice.check_whole_number(definition #> '{options,base_delay}', 1,
    format('options.base_delay of flow "%s"', v_flow));
  perform sluice.check_whole_number(definition #> '{options,timeout}', 1,
    format('options.timeout of flow "%s"', v_flow));
  perform sluice.check_timeout(definition #> '{options,timeout}',
    format('options.timeout of flow "%s"', v_flow));

  if jsonb_typeof(definition -> 'steps') is distinct from 'array'
    or jsonb_array_length(definition -> 'steps') = 0
  then
    raise exception 'Invalid flow definition: flow "%" has no steps', v_flow
      using errcode = 'invalid_parameter_value';
  end if;

  for v_step in select value from jsonb_array_elements(definition -> 'steps') loop
    v_slug := v_step ->> 'step_slug';
    if jsonb_typeof(v_step -> 'step_slug') is distinct from 'string'
      or not sluice.is_valid_slug(v_slug) or lower(v_slug) = 'run'
    then
      raise exception 'Invalid flow definition: step % of flow "%" has slug %, which is not a valid step slug ("run" is reserved)',
        v_i, v_flow, coalesce((v_step -> 'step_slug')::text, 'null')
        using errcode = 'invalid_parameter_value';
    end if;
    if lower(v_slug) = any (v_lower) then
      raise exception 'Invalid flow definition: flow "%" has step "%" twice (slugs are compared case-insensitively)',
        v_flow, v_slug
        using errcode = 'invalid_parameter_value';
    end if;
    if v_step -> 'step_index' is distinct from to_jsonb(v_i) then
      raise exception 'Invalid flow definition: step "%" of flow "%" has step_index %, expected %',
        v_slug, v_flow, coalesce((v_step -> 'step_index')::text, 'null'), v_i
        using errcode = 'invalid_parameter_value';
    end if;
    perform sluice.check_enum(coalesce(v_step -> 'step_type', 'null'), array['single', 'map', 'sleep', 'signal', 'subflow'],
      format('step_type of step "%s"', v_slug));
    perform sluice.check_enum(v_step -> 'when_unmet', array['fail', 'skip', 'skip-cascade'],
      format('when_unmet of step "%s"', v_slug));
    perform sluice.check_enum(v_step -> 'when_exhausted', array['fail', 'skip', 'skip-cascade'],
      format('when_exhausted of step "%s"', v_slug));
    perform sluice.check_whole_number(v_step #> '{options,max_attempts}', 1,
      format('options.max_attempts of step "%s"', v_slug));
    perform sluice.check_whole_number(v_step #> '{options,base_delay}', 1,
      format('options.base_delay of step "%s"', v_slug));
    perform sluice.check_whole_number(v_step #> '{options,timeout}', 1,
      format('options.timeout of step "%s"', v_slug));
    perform sluice.check_timeout(v_step #> '{options,timeout}',
      format('options.timeout of step "%s"', v_slug));
    perform sluice.check_whole_number(v_step #> '{options,start_delay}', 0,
      format('options.start_delay of step "%s"', v_slug));
    foreach v_pattern in array array['required_input_pattern', 'forbidden_input_pattern'] loop
      if coalesce(jsonb_typeof(v_step -> v_pattern), 'null') not in ('null', 'object') then
        raise exception 'Invalid flow definition: % of step "%" must be a JSON object or null, got %',
          v_pattern, v_slug, v_step -> v_pattern
          using errcode = 'invalid_parameter_value';
      end if;
    end loop;

    if jsonb_typeof(coalesce(v_step -> 'deps', 'null')) <> 'array' then
      raise exception 'Invalid flow definition: deps of step "%" must be an array, got %',
        v_slug, coalesce(v_step -> 'deps', 'null')
        using errcode = 'invalid_parameter_value';
    end if;
    v_deps := '{}';
    for v_dep in select value from jsonb_array_elements(v_step -> 'deps') loop
      if jsonb_typeof(v_dep) <> 'string' or not ((v_dep #>> '{}') = any (v_slugs)) then
        raise exception 'Invalid flow definition: step "%" depends on %, which is not an earlier step of flow "%"',
          v_slug, v_dep, v_flow
          using errcode = 'invalid_parameter_value';
      end if;
      if (v_dep #>> '{}') = any (v_deps)
        or (cardinality(v_deps) > 0 and (v_dep #>> '{}') collate "C" < v_deps[cardinality(v_deps)] collate "C")
      then
        raise exception 'Invalid flow definition: deps of step "%" must be distinct and sorted, got %',
          v_slug, v_step -> 'deps'
          using errcode = 'invalid_parameter_value';
      end if;
      v_deps := v_deps || (v_dep #>> '{}');
    end loop;

    if v_step ->> 'step_type' = 'map' then
      if coalesce(v_step -> 'map_source', 'null') = 'null' then
        if cardinality(v_deps) > 0 then
          raise exception 'Invalid flow definition: map step "%" maps the run input (map_source null) and so cannot have deps, got %',
            v_slug, v_step -> 'deps'
            using errcode = 'invalid_parameter_value';
        end if;
      elsif v_deps is distinct from array[v_step ->> 'map_source'] then
        raise exception 'Invalid flow definition: map step "%" maps over %, so its deps must be exactly [%], got %',
          v_slug, v_step -> 'map_source', v_step -> 'map_source', v_step -> 'deps'
          using errcode = 'invalid_parameter_value';
      end if;
    elsif coalesce(v_step -> 'map_source', 'null') <> 'null' then
      raise exception 'Invalid flow definition: single step "%" cannot have a map_source, got %',
        v_slug, v_step -> 'map_source'
        using errcode = 'invalid_parameter_value';
    end if;

    perform sluice.validate_wait_step(v_flow, v_step, v_slugs, v_types);
    perform sluice.check_subflow_child(v_flow, v_step);

    v_slugs := v_slugs || v_slug;
    v_types := v_types || (v_step ->> 'step_type');
    v_lower := v_lower || lower(v_slug);
    v_i := v_i + 1;
  end loop;

  if jsonb_typeof(definition -> 'routes') is distinct from 'array'
    or jsonb_array_length(definition -> 'routes') <> v_i
  then
    raise exception 'Invalid flow definition: routes of flow "%" must list one {step_slug, queue_name} per step in step order, got %',
      v_flow, coalesce(definition -> 'routes', 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  v_i := 0;
  for v_route in select value from jsonb_array_elements(definition -> 'routes') loop
    if v_route ->> 'step_slug' is distinct from v_slugs[v_i + 1]
      or jsonb_typeof(v_route -> 'queue_name') is distinct from 'string'
    then
      raise exception 'Invalid flow definition: route % of flow "%" must be {"step_slug": "%", "queue_name": "..."}, got %',
        v_i, v_flow, v_slugs[v_i + 1], v_route
        using errcode = 'invalid_parameter_value';
    end if;
    v_i := v_i + 1;
  end loop;
end;
$$;

-- Stores what the live attempt of `step_slug` computed for the wait steps that depend on it:
-- waits is a JSON array of {step_slug, key} (a signal wait) or {step_slug, until | seconds}
-- (a sleep) or {step_type, input} (a subflow: its child input; a map subflow's an array of
-- them). Refuses (and so rolls back the completion) an entry for a step that is not a wait
-- depending on step_slug, a wait of it left without an entry, or a malformed value: the
-- completion of a dependency is the one moment a wait's parameters can be known.
-- The caller holds the run's lock (sluice.complete_tasks).
CREATE OR REPLACE FUNCTION sluice.store_wait_parameters(run_id uuid, flow_slug text, step_slug text, waits jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_wait record;
  v_entry jsonb;
begin
  for v_wait in
    select s.step_slug, s.step_type
    from sluice.deps d
    join sluice.steps s on s.flow_slug = d.flow_slug and s.step_slug = d.step_slug
    where d.flow_slug = store_wait_parameters.flow_slug
      and d.dep_slug = store_wait_parameters.step_slug
      and s.step_type in ('sleep', 'signal', 'subflow')
  loop
    select w.value into v_entry
    from jsonb_array_elements(coalesce(store_wait_parameters.waits, '[]'::jsonb)) as w(value)
    where w.value ->> 'step_slug' = v_wait.step_slug;
    if v_entry is null then
      raise exception 'Cannot complete step "%" of run %: the result carries no % of wait step "%", which depends on it',
        store_wait_parameters.step_slug, store_wait_parameters.run_id,
        case v_wait.step_type when 'signal' then 'signal key' when 'subflow' then 'child input'
          else 'due time' end,
        v_wait.step_slug
        using errcode = 'invalid_parameter_value',
          hint = 'A worker of sluice 0.2 computes it; upgrade the workers of the flow';
    end if;
    if v_wait.step_type = 'signal' and (jsonb_typeof(v_entry -> 'key') is distinct from 'string'
      or char_length(v_entry ->> 'key') not between 1 and sluice.max_signal_key_length())
    then
      raise exception 'Cannot complete step "%" of run %: the signal key of wait step "%" must be a string of 1 to % characters, got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        sluice.max_signal_key_length(), left(coalesce(v_entry -> 'key', 'null')::text, 100)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_wait.step_type = 'sleep' and not (
      (jsonb_typeof(v_entry -> 'until') = 'string' and v_entry -> 'seconds' is null)
      or (jsonb_typeof(v_entry -> 'seconds') = 'number' and v_entry -> 'until' is null
        and (v_entry ->> 'seconds')::numeric between 0 and 2147483647
        and (v_entry ->> 'seconds')::numeric = trunc((v_entry ->> 'seconds')::numeric)))
    then
      raise exception 'Cannot complete step "%" of run %: the due time of sleep step "%" must be {until: timestamp} or {seconds: whole number from 0}, got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        left(v_entry::text, 200)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_wait.step_type = 'subflow' and not (v_entry ? 'input') then
      raise exception 'Cannot complete step "%" of run %: the entry of subflow step "%" must carry its child input as "input", got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        left(v_entry::text, 200)
        using errcode = 'invalid_parameter_value';
    end if;
    update sluice.step_states ss
    set wait_input = case when v_wait.step_type = 'subflow' then v_entry -> 'input' end,
      wait_key = v_entry ->> 'key',
      wait_until = (v_entry ->> 'until')::timestamptz,
      wait_seconds = (v_entry ->> 'seconds')::integer
    where ss.run_id = store_wait_parameters.run_id and ss.step_slug = v_wait.step_slug
      and ss.status = 'created';
  end loop;
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
create or replace function sluice.start_subflow(run_id uuid, flow_slug text, step_slug text,
  wait_options jsonb)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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
    elsif v_child.status in ('failed', 'cancelled') then
      -- The parent's retry goes on below it: the child's own retry re-runs only what failed.
      perform sluice.retry_run(v_child.run_id, true);
      select * into v_child from sluice.runs r where r.run_id = v_child.run_id;
    end if;
    if v_child.status in ('failed', 'cancelled') then
      perform sluice.fail_run(start_subflow.run_id, start_subflow.step_slug,
        sluice.subflow_child_error(v_child));
      return;
    end if;
    if v_child.status <> 'completed' then
      v_remaining := v_remaining + 1;
    end if;
  end loop;

  update sluice.step_states ss
  set status = 'waiting', waiting_at = now(), initial_tasks = v_count,
    remaining_tasks = v_remaining
  where ss.run_id = start_subflow.run_id and ss.step_slug = start_subflow.step_slug;
  if v_remaining = 0 then
    perform sluice.complete_step(start_subflow.run_id, start_subflow.flow_slug,
      start_subflow.step_slug, sluice.subflow_output(start_subflow.run_id,
        start_subflow.step_slug, v_map));
  end if;
end;
$$;

-- Starts a ready wait step (called by sluice.start_ready_steps, which holds the run's lock):
-- a wait whose dependency was skipped is skipped (it has nothing to wait on; its dependents see
-- it absent), a sleep whose due time has passed completes at once with it, a signal wait whose
-- key has a buffered signal completes at once with the earliest one's payload and consumes it,
-- and any other wait moves to 'waiting' (step:waiting) with its key and due time. A buffered
-- signal counts when it is not consumed, not expired, no larger than the flow's output limit, and
-- was sent after the run started (or the step accepts signals sent before its run). A subflow
-- step starts its child runs (sluice.start_subflow). The caller's loop starts what a completion
-- here releases.
CREATE OR REPLACE FUNCTION sluice.begin_wait(run_id uuid, flow_slug text, step_slug text, step_type text, deps_count integer, wait_options jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_state sluice.step_states;
  v_until timestamptz;
  v_signal sluice.signals;
  v_run_started timestamptz;
  v_max_bytes integer;
begin
  select * into v_state from sluice.step_states ss
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  if exists (
    select 1 from sluice.deps d
    join sluice.step_states ds on ds.run_id = begin_wait.run_id and ds.step_slug = d.dep_slug
    where d.flow_slug = begin_wait.flow_slug and d.step_slug = begin_wait.step_slug
      and ds.status = 'skipped'
  ) then
    perform sluice.skip_steps(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      'dependency_skipped', false);
    return;
  end if;

  if begin_wait.step_type = 'subflow' then
    perform sluice.start_subflow(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      begin_wait.wait_options);
    return;
  end if;

  if begin_wait.step_type = 'sleep' then
    if v_state.wait_seconds is null and v_state.wait_until is null then
      raise exception 'Cannot start sleep step "%" of run %: it has no due time (its dependency completed without one)',
        begin_wait.step_slug, begin_wait.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    v_until := coalesce(now() + make_interval(secs => v_state.wait_seconds), v_state.wait_until);
    update sluice.step_states ss
    set status = 'waiting', waiting_at = now(), wait_until = v_until
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    if v_until <= now() then
      perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug,
        begin_wait.step_slug, to_jsonb(sluice.iso_instant(v_until)));
    end if;
    return;
  end if;

  if v_state.wait_key is null then
    raise exception 'Cannot start signal wait step "%" of run %: it has no signal key (its dependency completed without one)',
      begin_wait.step_slug, begin_wait.run_id
      using errcode = 'invalid_parameter_value';
  end if;
  -- Normally held already (sluice.complete_tasks takes it before the run lock); a no-op then. It
  -- also makes this the only consumer of the key's buffered signals until the transaction ends.
  perform sluice.lock_signal_keys(array[v_state.wait_key]);
  update sluice.step_states ss
  set status = 'waiting', waiting_at = now(),
    wait_until = now() + make_interval(secs => (begin_wait.wait_options ->> 'timeout_seconds')::integer)
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  select r.started_at into v_run_started from sluice.runs r where r.run_id = begin_wait.run_id;
  select f.opt_max_output_bytes into v_max_bytes from sluice.flows f
  where f.flow_slug = begin_wait.flow_slug;
  select * into v_signal from sluice.signals s
  where s.signal_key = v_state.wait_key
    and s.consumed_at is null
    and s.expires_at > now()
    and (s.sent_at >= v_run_started
      or begin_wait.wait_options -> 'accept_signals_sent_before_run' = 'true'::jsonb)
    and octet_length(s.payload::text) <= v_max_bytes
  order by s.sent_at, s.signal_id
  limit 1;
  if found then
    update sluice.signals s set consumed_at = now() where s.signal_id = v_signal.signal_id;
    update sluice.step_states ss set wait_signal_id = v_signal.signal_id
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      v_signal.payload);
  end if;
end;
$$;

CREATE OR REPLACE FUNCTION sluice.start_ready_steps(run_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run_input jsonb;
  v_step record;
  v_input jsonb;
  v_source jsonb;
  v_count integer;
  v_ids bigint[];
  v_delay integer;
begin
  loop
    select s.*, ss.step_slug as ready_slug into v_step
    from sluice.step_states ss
    join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
    where ss.run_id = start_ready_steps.run_id
      and ss.status = 'created'
      and ss.remaining_deps = 0
    order by s.step_index
    limit 1;
    exit when not found;

    -- A map over a skipped step has nothing to map. Skipping it with its dependents keeps the
    -- typed promise that a map's output is present wherever the map itself cannot be skipped.
    if v_step.map_source is not null and exists (
      select 1 from sluice.step_states ds
      where ds.run_id = start_ready_steps.run_id
        and ds.step_slug = v_step.map_source
        and ds.status = 'skipped'
    ) then
      perform sluice.skip_steps(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, 'dependency_skipped', true
      );
      continue;
    end if;

    -- A wait step holds no task and no message: it waits in its step state (sluice.begin_wait);
    -- a subflow step waits for its child runs, which begin_wait starts.
    if v_step.step_type in ('sleep', 'signal', 'subflow') then
      perform sluice.begin_wait(start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug,
        v_step.step_type, v_step.deps_count, v_step.wait_options);
      continue;
    end if;

    -- Only root steps need the run input: most calls (after a completion) never read the run.
    if v_run_input is null and v_step.deps_count = 0 then
      select r.input into v_run_input from sluice.runs r where r.run_id = start_ready_steps.run_id;
    end if;

    if v_step.deps_count = 0 then
      v_input := v_run_input;
    else
      v_input := sluice.dependency_outputs(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug
      );
    end if;

    if (v_step.required_input_pattern is not null
        and not v_input @> v_step.required_input_pattern)
      or (v_step.forbidden_input_pattern is not null
        and v_input @> v_step.forbidden_input_pattern)
    then
      if v_step.when_unmet = 'fail' then
        perform sluice.fail_run(
          start_ready_steps.run_id, v_step.step_slug,
          format('condition of step "%s" is unmet', v_step.step_slug)
        );
        return;
      end if;
      perform sluice.skip_steps(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, 'condition_unmet',
        v_step.when_unmet = 'skip-cascade'
      );
      continue;
    end if;

    if v_step.step_type = 'map' then
      if v_step.map_source is null then
        v_source := v_run_input;
      else
        select ds.output into v_source
        from sluice.step_states ds
        where ds.run_id = start_ready_steps.run_id and ds.step_slug = v_step.map_source;
      end if;
      if jsonb_typeof(v_source) is distinct from 'array' then
        raise exception 'Cannot start map step "%" of run %: it needs an array, got %',
          v_step.step_slug, start_ready_steps.run_id, coalesce(jsonb_typeof(v_source), 'null')
          using errcode = 'invalid_parameter_value';
      end if;
      v_count := jsonb_array_length(v_source);
      -- The fan-out limit: the whole statement (a start or a completion) fails, nothing stays.
      if v_count > (select f.opt_max_map_tasks from sluice.flows f
          where f.flow_slug = v_step.flow_slug) then
        raise exception 'Cannot start map step "%" of run %: it maps over % elements, more than the limit of % tasks (max_map_tasks)',
          v_step.step_slug, start_ready_steps.run_id, v_count,
          (select f.opt_max_map_tasks from sluice.flows f where f.flow_slug = v_step.flow_slug)
          using errcode = 'SLL01', detail = json_build_object('limit', 'max_map_tasks',
            'size', v_count, 'max', (select f.opt_max_map_tasks from sluice.flows f
              where f.flow_slug = v_step.flow_slug))::text;
      end if;
    else
      v_count := 1;
    end if;

    if v_count = 0 then
      perform sluice.complete_step(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, '[]'::jsonb
      );
      continue;
    end if;

    v_delay := coalesce(v_step.opt_start_delay, 0);
    select array_agg(sent.id order by sent.ord) into v_ids
    from pgmq.send_batch(
      v_step.queue_name,
      array(
        select jsonb_build_object(
          'flow_slug', v_step.flow_slug,
          'run_id', start_ready_steps.run_id,
          'step_slug', v_step.step_slug,
          'task_index', i
        )
        from generate_series(0, v_count - 1) as i
        order by i
      ),
      v_delay
    ) with ordinality as sent(id, ord);

    -- A map task gets its element now, in one pass over the array: a claim that read it from the
    -- array would detoast the whole array for every task, a cost that grows with the map's width.
    insert into sluice.step_tasks (
      run_id, step_slug, task_index, flow_slug, queue_name, message_id, input
    )
    select start_ready_steps.run_id, v_step.step_slug, (m.ord - 1)::integer, v_step.flow_slug,
      v_step.queue_name, m.id, e.value
    from unnest(v_ids) with ordinality as m(id, ord)
    left join jsonb_array_elements(
      case when v_step.step_type = 'map' then v_source end
    ) with ordinality as e(value, ord) on e.ord = m.ord;

    update sluice.step_states ss
    set status = 'started', started_at = now(), initial_tasks = v_count, remaining_tasks = v_count
    where ss.run_id = start_ready_steps.run_id and ss.step_slug = v_step.step_slug;

    if v_delay = 0 then
      perform sluice.notify_queue(v_step.queue_name);
    end if;
  end loop;

  perform sluice.finish_run_if_done(start_ready_steps.run_id);
end;
$$;

-- A child run completed (called by sluice.finish_run_if_done, in the child's final transaction,
-- which holds the parent's lock: its runs were locked root first). When its parent step still
-- waits, one child fewer remains; the last one completes the step with the child's output (a map
-- subflow: its children's outputs in element order) and starts the parent's next steps. A parent
-- step that no longer waits (failed, cancelled: the child was retried on its own) is left as it is.
create or replace function sluice.end_subflow_child(child_run_id uuid)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_child sluice.runs;
  v_state sluice.step_states;
  v_map boolean;
begin
  select * into v_child from sluice.runs r where r.run_id = end_subflow_child.child_run_id;
  -- Held already when the caller locked root first; taken here for any other caller.
  perform 1 from sluice.runs r where r.run_id = v_child.parent_run_id for update;
  select * into v_state from sluice.step_states ss
  where ss.run_id = v_child.parent_run_id and ss.step_slug = v_child.parent_step_slug
    and ss.status = 'waiting';
  if not found then
    return;
  end if;
  if v_state.remaining_tasks > 1 then
    update sluice.step_states ss set remaining_tasks = ss.remaining_tasks - 1
    where ss.run_id = v_state.run_id and ss.step_slug = v_state.step_slug;
    return;
  end if;
  select s.wait_options #> '{subflow,map}' = 'true'::jsonb into v_map
  from sluice.steps s where s.flow_slug = v_state.flow_slug and s.step_slug = v_state.step_slug;
  perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
    sluice.subflow_output(v_state.run_id, v_state.step_slug, v_map));
  perform sluice.start_ready_steps(v_state.run_id);
end;
$$;

-- Completes the run once no step is pending. Run output = outputs of the completed leaf steps
-- (steps nothing depends on), keyed by step slug.
--
-- PL/pgSQL, not SQL: a SQL function's body is parsed and planned again on every call, which made
-- this, run after every completion, the most expensive statement of the hot path. PL/pgSQL keeps
-- the plan for the session. A child run's completion goes on to its parent's subflow step
-- (sluice.end_subflow_child), in this same transaction.
CREATE OR REPLACE FUNCTION sluice.finish_run_if_done(run_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_parent uuid;
begin
  update sluice.runs r
  set status = 'completed', completed_at = now(),
    output = (
      select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
      from sluice.step_states ss
      where ss.run_id = r.run_id
        and ss.status = 'completed'
        and not exists (
          select 1 from sluice.deps d
          where d.flow_slug = r.flow_slug and d.dep_slug = ss.step_slug
        )
    )
  where r.run_id = finish_run_if_done.run_id
    and r.status = 'started'
    and r.remaining_steps = 0
  returning r.parent_run_id into v_parent;
  if v_parent is not null then
    perform sluice.end_subflow_child(finish_run_if_done.run_id);
  end if;
end;
$$;

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

-- Retries a failed or cancelled run from where it stopped. The run goes back to 'started'
-- (retry_count + 1, retried_at, retried_by = current_user); every step that failed or was
-- cancelled goes on: one that had started keeps its completed tasks (with their outputs) and
-- requeues its failed and cancelled ones on their stored queues with fresh messages, one that
-- had not started waits for its dependencies again (remaining_deps still counts exactly the
-- dependencies that had not resolved). Completed and skipped steps stay as they are and never
-- run again. Requeued tasks keep their attempt counts (the fencing tokens continue, so no late
-- report of an earlier attempt can match) and get max_attempts more (attempts_base). Events:
-- run:retried, then step:started per step that started again.
--
-- Only the concrete flow the run started on takes part (never an alias's current target).
-- Unless `force`, refuses (SQLSTATE SLR01, naming the steps and queues in the message and as a
-- JSON array of {step_slug, queue_name} in the detail) when a step it would
-- start again has no live worker of that flow: the work would wait in the queue until one
-- starts; with force it is queued anyway.
-- Answers {run_id, outcome, status, retry_count, tasks, steps}: outcome 'retried' (status is
-- 'started', or 'failed' again when a step fails at once, e.g. an unmet condition that fails the
-- run) or 'unchanged' for a run that is started or completed. Raises no_data_found when no run
-- has the id (a run is deleted with its flow).
-- Lock order: the run row (a subflow child's after its ancestors, root first:
-- sluice.lock_run_ancestors) -> its step states (slug order) -> the tasks it requeues -> messages
-- (new ones sent, the old ones' archived copies deleted): the global ladder. A subflow step that
-- failed or was cancelled waits again for the children it had, retrying those that failed
-- (sluice.start_subflow).
CREATE OR REPLACE FUNCTION sluice.retry_run(run_id uuid, force boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run sluice.runs;
  v_reset text[];
  v_missing text;
  v_missing_routes jsonb;
  v_step record;
  v_ids bigint[];
  v_tasks integer := 0;
begin
  perform sluice.lock_run_ancestors(array[retry_run.run_id]);
  select * into v_run from sluice.runs r where r.run_id = retry_run.run_id for update;
  if not found then
    raise exception 'Cannot retry run %: no such run', retry_run.run_id
      using errcode = 'no_data_found',
        hint = 'A run is deleted with its flow (delete_flow_and_data, flows reset) and by prune';
  end if;
  if v_run.status not in ('failed', 'cancelled') then
    return jsonb_build_object('run_id', v_run.run_id, 'outcome', 'unchanged',
      'status', v_run.status, 'retry_count', v_run.retry_count, 'tasks', 0, 'steps', 0);
  end if;

  select array_agg(l.step_slug order by l.step_slug) into v_reset
  from (
    select ss.step_slug from sluice.step_states ss
    where ss.run_id = retry_run.run_id and ss.status in ('failed', 'cancelled')
    order by ss.step_slug
    for update
  ) l;

  if not coalesce(retry_run.force, false) then
    select string_agg(format('%s (queue %s)', rc.step_slug, rc.queue_name), ', '
        order by rc.step_index),
      jsonb_agg(jsonb_build_object('step_slug', rc.step_slug, 'queue_name', rc.queue_name)
        order by rc.step_index)
    into v_missing, v_missing_routes
    from sluice.route_coverage rc
    where rc.flow_slug = v_run.flow_slug and rc.step_slug = any (v_reset) and rc.missing_worker;
    if v_missing is not null then
      raise exception 'Cannot retry run % of flow "%": no live worker of that flow serves step %',
        retry_run.run_id, v_run.flow_slug, v_missing
        using errcode = 'SLR01',
          detail = v_missing_routes::text,
          hint = 'Start the flow''s workers, or retry with force to queue the work for them';
    end if;
  end if;

  update sluice.runs r
  set status = 'started', failed_at = null, cancelled_at = null, error_message = null,
    cancel_reason = null, cancelled_by = null,
    retry_count = r.retry_count + 1, retried_at = now(), retried_by = current_user
  where r.run_id = retry_run.run_id
  returning * into v_run;
  if (select f.opt_events from sluice.flows f where f.flow_slug = v_run.flow_slug) then
    perform sluice.send_run_event(v_run.run_id, sluice.run_event(v_run, 'retried'));
  end if;

  -- The third rung: the tasks that get another go, in key order.
  perform 1 from sluice.step_tasks t
  where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
    and t.status in ('failed', 'cancelled')
  order by t.step_slug, t.task_index
  for update;

  for v_step in
    select t.step_slug, t.queue_name, array_agg(t.task_index order by t.task_index) as indexes,
      array_agg(t.message_id order by t.task_index) as old_ids
    from sluice.step_tasks t
    where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
      and t.status in ('failed', 'cancelled')
    group by t.step_slug, t.queue_name
    order by t.step_slug
  loop
    select array_agg(sent.id order by sent.ord) into v_ids
    from pgmq.send_batch(
      v_step.queue_name,
      array(
        select jsonb_build_object('flow_slug', v_run.flow_slug, 'run_id', v_run.run_id,
          'step_slug', v_step.step_slug, 'task_index', i.idx)
        from unnest(v_step.indexes) with ordinality as i(idx, ord)
        order by i.ord
      ),
      0
    ) with ordinality as sent(id, ord);

    update sluice.step_tasks t
    set status = 'queued', message_id = m.id, attempts_base = t.attempts_count,
      failed_at = null, cancelled_at = null, permanently_stalled_at = null, queued_at = now()
    from unnest(v_step.indexes, v_ids) as m(task_index, id)
    where t.run_id = retry_run.run_id and t.step_slug = v_step.step_slug
      and t.task_index = m.task_index;
    v_tasks := v_tasks + cardinality(v_step.indexes);

    -- The old messages' archived copies: prune finds a task's archived message by the id the
    -- task stores, which is now the new one's.
    perform sluice.delete_archived_messages(
      array_fill(v_step.queue_name, array[cardinality(v_step.old_ids)]), v_step.old_ids);
    perform sluice.notify_queue(v_step.queue_name);
  end loop;

  update sluice.step_states ss
  set status = case when ss.started_at is null then 'created' else 'started' end,
    started_at = case when ss.started_at is null then null else now() end,
    failed_at = null, cancelled_at = null, error_message = null, progress_sent_at = null,
    remaining_tasks = case when ss.started_at is null then null else (
      select count(*)::integer from sluice.step_tasks t
      where t.run_id = ss.run_id and t.step_slug = ss.step_slug and t.status <> 'completed'
    ) end
  where ss.run_id = retry_run.run_id and ss.step_slug = any (v_reset);

  update sluice.runs r
  set remaining_steps = (
    select count(*)::integer from sluice.step_states ss
    where ss.run_id = r.run_id and ss.status not in ('completed', 'skipped')
  )
  where r.run_id = retry_run.run_id;

  -- Steps that had not started start now if their dependencies are resolved.
  perform sluice.start_ready_steps(retry_run.run_id);

  select * into v_run from sluice.runs r where r.run_id = retry_run.run_id;
  return jsonb_build_object('run_id', v_run.run_id, 'outcome', 'retried',
    'status', v_run.status, 'retry_count', v_run.retry_count, 'tasks', v_tasks,
    'steps', cardinality(v_reset));
end;
$$;

-- As in migration 20261130001800, except that wait steps need no worker: they hold no task.
CREATE OR REPLACE FUNCTION sluice.activate_alias(alias text, flow_slug text, expected_generation bigint, force boolean DEFAULT false, activated_by text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_alias text := activate_alias.alias;
  v_target text := activate_alias.flow_slug;
  v_current sluice.aliases;
  v_generation bigint;
  v_missing text;
  v_missing_routes jsonb;
  v_name text;
begin
  if v_alias is null or not sluice.is_valid_slug(v_alias) then
    raise exception 'Cannot activate alias %: an alias is a slug (starts with a letter; letters, digits and single underscores; no trailing underscore)',
      coalesce(quote_literal(v_alias), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if expected_generation is null or expected_generation < 0 then
    raise exception 'Cannot activate alias "%": expected_generation must be 0 (a new alias) or the alias''s current generation, got %',
      v_alias, coalesce(expected_generation::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  -- The flow locks of both names, in order: the checks below then see every compilation,
  -- deletion and activation of these names that committed before, and none starts meanwhile.
  for v_name in
    select distinct lower(x) from unnest(array[v_alias, v_target]) x where x is not null order by 1
  loop
    perform pg_advisory_xact_lock(hashtextextended('sluice.flow:' || v_name, 0));
  end loop;

  if not exists (select 1 from sluice.flows f where f.flow_slug = v_target) then
    raise exception 'Cannot activate alias "%": no flow "%" (a flow exists once a worker for it has started and compiled it)',
      v_alias, coalesce(v_target, 'null')
      using errcode = 'no_data_found';
  end if;
  if exists (
    select 1 from sluice.flows f
    where lower(f.flow_slug) = lower(v_alias) and f.flow_slug <> v_alias
  ) or exists (
    select 1 from sluice.aliases a
    where lower(a.alias) = lower(v_alias) and a.alias <> v_alias
  ) then
    raise exception 'Cannot activate alias "%": it differs only in case from the flow or alias "%"',
      v_alias, (
        select n from (
          select f.flow_slug as n from sluice.flows f where lower(f.flow_slug) = lower(v_alias)
          union all
          select a.alias from sluice.aliases a where lower(a.alias) = lower(v_alias)
        ) names where n <> v_alias limit 1)
      using errcode = 'duplicate_object';
  end if;

  select * into v_current from sluice.aliases a where a.alias = v_alias;
  if v_current.flow_slug = v_target and v_current.generation = expected_generation then
    return v_current.generation;
  end if;

  if not coalesce(force, false) then
    select string_agg(format('%s (queue %s)', s.step_slug, s.queue_name), ', ' order by s.step_index),
      jsonb_agg(jsonb_build_object('step_slug', s.step_slug, 'queue_name', s.queue_name)
        order by s.step_index)
    into v_missing, v_missing_routes
    from sluice.steps s
    where s.flow_slug = v_target
      and s.step_type not in ('sleep', 'signal', 'subflow')
      and not exists (
        select 1 from sluice.live_workers w
        where w.deprecated_at is null
          and w.queue_name = s.queue_name
          and w.flow_slug = s.flow_slug
          and (w.step_slug is null or w.step_slug = s.step_slug)
      );
    if v_missing is not null then
      raise exception 'Cannot activate alias "%" on flow "%": no live worker serves step %; start its workers first, or pass force',
        v_alias, v_target, v_missing
        using errcode = 'SLA02', detail = v_missing_routes::text;
    end if;
  end if;

  if expected_generation = 0 then
    -- A name used before (by a flow since deleted) continues its generations: the history is
    -- append-only, and a generation read before the deletion must not match again.
    insert into sluice.aliases as a (alias, flow_slug, generation)
    values (v_alias, v_target, coalesce(
      (select max(h.generation) from sluice.alias_history h where h.alias = v_alias), 0) + 1)
    on conflict on constraint aliases_pkey do nothing
    returning a.generation into v_generation;
  else
    -- The compare-and-swap: a concurrent activation that committed first has moved the
    -- generation on, and this update then matches no row.
    update sluice.aliases a
    set flow_slug = v_target, generation = a.generation + 1, activated_at = now()
    where a.alias = v_alias and a.generation = expected_generation
    returning a.generation into v_generation;
  end if;

  if v_generation is null then
    select * into v_current from sluice.aliases a where a.alias = v_alias;
    raise exception 'Cannot activate alias "%": expected generation % but it is %',
      v_alias, expected_generation,
      case when v_current.alias is null then 'absent (generation 0)'
        else format('at generation %s (flow "%s")', v_current.generation, v_current.flow_slug) end
      using errcode = 'SLA01',
        detail = jsonb_build_object('generation', coalesce(v_current.generation, 0),
          'flow_slug', v_current.flow_slug)::text,
        hint = 'Another activation won; read the alias again and decide whether to activate';
  end if;

  insert into sluice.alias_history (
    alias, flow_slug, generation, previous_flow_slug, activated_by, forced
  )
  values (
    v_alias, v_target, v_generation,
    case when expected_generation > 0 then v_current.flow_slug end,
    coalesce(activate_alias.activated_by, current_user), coalesce(force, false)
  );
  return v_generation;
end;
$$;

-- New routines: no role but sluice's own may call them until granted (grant_access grants every
-- routine of the schema to the roles it is given).
revoke all on function sluice.max_subflow_depth() from public;
revoke all on function sluice.run_ancestors(uuid[]) from public;
revoke all on function sluice.lock_run_ancestors(uuid[]) from public;
revoke all on function sluice.subflow_output(uuid, text, boolean) from public;
revoke all on function sluice.subflow_child_error(sluice.runs) from public;
revoke all on function sluice.check_subflow_child(text, jsonb) from public;
revoke all on function sluice.start_subflow(uuid, text, text, jsonb) from public;
revoke all on function sluice.end_subflow_child(uuid) from public;
