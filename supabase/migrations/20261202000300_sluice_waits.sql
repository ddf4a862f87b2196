-- Durable waits (docs/waits.md): a step that sleeps until a due time (.sleep) or waits for an
-- external signal (.waitForSignal), holding no task, no message and no worker while it waits.
--
-- A wait step has exactly one dependency, a handler step (single, not a map). The worker that
-- completes that dependency computes the wait's key or due time from the dependency's output (the
-- wait's only input) and sends it with the completion (complete_tasks results carry `waits`);
-- SQL stores it on the wait's step state (sluice.store_wait_parameters) and, as the dependency's
-- completion makes the wait ready, sluice.begin_wait moves it to 'waiting' in the same
-- transaction. No message is sent for a wait step and no worker ever claims one.
--
-- Releases:
--   - sluice.send_signal(key, payload, signal_id): idempotent by signal_id; completes every step
--     waiting on the key with the payload and starts their dependents, in the caller's
--     transaction. A signal no step waits for yet is kept (sluice.signals): a step that starts
--     waiting on its key later completes at once with the earliest kept signal of the key.
--   - sluice.release_due_waits(): every worker's heartbeat calls it (pg_cron may too): a sleep
--     whose due time passed completes with that due time; a signal wait whose timeout passed
--     follows its on_timeout (fail the run, skip the step, or complete with the timeout value).
--
-- Lock order: signal keys (transaction advisory locks, taken in lock-id order) -> runs ->
-- step_states -> step_tasks -> PGMQ message rows. The key lock serializes a signal with a step
-- starting to wait on its key, so neither misses the other (both uncommitted, neither would see
-- the other). sluice.send_signal takes its key, then the runs of the steps waiting on it
-- (sluice.lock_run_steps); sluice.complete_tasks takes the keys of the waits its results start
-- before it locks any run. A retry (sluice.retry_run) that puts a wait back to waiting takes the
-- key under the run lock: no signal can be waiting for that run's lock then, since a failed or
-- cancelled run has no waiting step. The sweep locks runs with skip locked, so concurrent
-- sweepers never wait for each other, and re-checks each wait under its run's lock: released
-- exactly once.
--
-- Invariants kept: a waiting step has no task and no message; a waiting run is 'started', so it
-- counts as active for drains, aliases and monitoring (runs_active_idx, version_drain); a cancel
-- or a failure of the run cancels its waiting steps (cancel_run_set, fail_run); a completed,
-- failed or cancelled run has no waiting step.
--
-- Redefined here (whole, create or replace): validate_definition, definition_shape,
-- stored_shape, shape_differences, create_flow (the wait step types and options are shape),
-- activate_alias (wait steps need no worker), start_ready_steps, complete_tasks, fail_run,
-- skip_steps, step_event, run_events; the view route_coverage leaves wait steps out. Run
-- control's sluice.cancel_run_set is defined here, not in 20261202000100, so that its one
-- definition in this release group also cancels waiting steps.

alter table sluice.steps
  drop constraint steps_step_type_check,
  add constraint steps_step_type_check
    check (step_type in ('single', 'map', 'sleep', 'signal')),
  -- A signal wait's timeout: {timeout_seconds, on_timeout: fail|skip|value, timeout_value};
  -- {} for a sleep, null for a handler step.
  add column wait_options jsonb,
  add constraint steps_wait_options_check
    check ((step_type in ('sleep', 'signal')) = (wait_options is not null));

alter table sluice.step_states
  drop constraint step_states_status_check,
  add constraint step_states_status_check
    check (status in ('created', 'started', 'waiting', 'completed', 'failed', 'skipped',
      'cancelled')),
  drop constraint step_states_skip_reason_check,
  add constraint step_states_skip_reason_check
    check (skip_reason in ('condition_unmet', 'retries_exhausted', 'dependency_skipped',
      'wait_timed_out')),
  -- A signal wait's key, as the completing worker computed it.
  add column wait_key text,
  -- A sleep given as a duration: its due time counts from when the wait starts.
  add column wait_seconds integer check (wait_seconds >= 0),
  -- When a sleep is due, or a signal wait times out (null: it waits until a signal comes).
  add column wait_until timestamptz,
  -- When the step started waiting.
  add column waiting_at timestamptz,
  -- The signal that completed the wait.
  add column wait_signal_id text,
  add constraint step_states_waiting_check check (status <> 'waiting' or waiting_at is not null);

-- send_signal finds the steps waiting on a key, the sweep the due ones.
create index step_states_wait_key_idx on sluice.step_states (wait_key)
  where status = 'waiting' and wait_key is not null;
create index step_states_wait_until_idx on sluice.step_states (wait_until)
  where status = 'waiting' and wait_until is not null;

-- Every signal sent, kept so that a wait starting after its signal still receives it.
create table sluice.signals (
  signal_id text primary key check (char_length(signal_id) between 1 and 1000),
  signal_key text not null check (char_length(signal_key) between 1 and 1000),
  payload jsonb not null default 'null'::jsonb,
  sent_at timestamptz not null default now(),
  -- The database role that sent it.
  sent_by text not null default current_user
);
create index signals_key_idx on sluice.signals (signal_key, sent_at);

-- The longest signal key and signal id.
create function sluice.max_signal_key_length()
returns integer
language sql
immutable
as $$ select 1000 $$;

-- Takes the transaction advisory lock of each signal key, in lock-id order (so two callers with
-- overlapping keys cannot deadlock, also when two keys share a lock id).
create function sluice.lock_signal_keys(keys text[])
returns void
language plpgsql
as $$
declare
  v_id bigint;
begin
  for v_id in
    select distinct hashtextextended('sluice.signal:' || k, 0)
    from unnest(lock_signal_keys.keys) as k
    where k is not null
    order by 1
  loop
    perform pg_advisory_xact_lock(v_id);
  end loop;
end;
$$;

-- A wait step's options in the shape (null for a handler step), defaults filled in.
create function sluice.wait_options(step jsonb)
returns jsonb
language sql
immutable
as $$
  select case step ->> 'step_type'
    when 'sleep' then '{}'::jsonb
    when 'signal' then jsonb_build_object(
      'timeout_seconds', coalesce(step #> '{wait,timeout_seconds}', 'null'::jsonb),
      'on_timeout', coalesce(step #>> '{wait,on_timeout}', 'fail'),
      'timeout_value', coalesce(step #> '{wait,timeout_value}', 'null'::jsonb))
  end
$$;

-- The rules of a wait step in a definition (called by sluice.validate_definition for every
-- step with the slugs and types of the steps before it): exactly one dependency, a handler step
-- that is not a map (its worker computes the wait's key or due time from its output); no
-- condition, no map source; a signal wait's timeout a whole number of seconds >= 1 and its
-- on_timeout one of fail, skip, value.
create function sluice.validate_wait_step(
  flow_slug text,
  step jsonb,
  earlier_slugs text[],
  earlier_types text[]
)
returns void
language plpgsql
immutable
as $$
declare
  v_slug text := step ->> 'step_slug';
  v_type text := step ->> 'step_type';
  v_dep text;
  v_dep_type text;
begin
  if v_type not in ('sleep', 'signal') then
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
  elsif coalesce(step -> 'wait', 'null'::jsonb) not in ('null'::jsonb, '{}'::jsonb) then
    raise exception 'Invalid flow definition: sleep step "%" of flow "%" takes no wait options, got %',
      v_slug, flow_slug, step -> 'wait'
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

create or replace function sluice.validate_definition(definition jsonb)
returns void
language plpgsql
as $$
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
    perform sluice.check_enum(coalesce(v_step -> 'step_type', 'null'), array['single', 'map', 'sleep', 'signal'],
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

create or replace function sluice.definition_shape(definition jsonb)
returns jsonb
language sql
stable
as $$
  select jsonb_build_object(
    'queue_mode', definition ->> 'queue_mode',
    'steps', jsonb_agg(jsonb_build_object(
      'step_slug', e.step ->> 'step_slug',
      'step_type', e.step ->> 'step_type',
      'deps', e.step -> 'deps',
      'map_source', coalesce(e.step -> 'map_source', 'null'::jsonb),
      'required_input_pattern', coalesce(e.step -> 'required_input_pattern', 'null'::jsonb),
      'forbidden_input_pattern', coalesce(e.step -> 'forbidden_input_pattern', 'null'::jsonb),
      'when_unmet', coalesce(e.step ->> 'when_unmet', 'skip'),
      'when_exhausted', coalesce(e.step ->> 'when_exhausted', 'fail'),
      'wait', sluice.wait_options(e.step),
      'queue_name', case definition ->> 'queue_mode'
        when 'routed' then definition -> 'routes' -> (e.ord::integer - 1) ->> 'queue_name'
        else sluice.derive_queue_name(
          definition ->> 'queue_mode', definition ->> 'flow_slug', e.step ->> 'step_slug',
          e.ord::integer - 1)
      end
    ) order by e.ord)
  )
  from jsonb_array_elements(definition -> 'steps') with ordinality as e(step, ord)
$$;

create or replace function sluice.stored_shape(flow_slug text)
returns jsonb
language sql
stable
as $$
  select jsonb_build_object(
    'queue_mode', f.queue_mode,
    'steps', (
      select jsonb_agg(jsonb_build_object(
        'step_slug', s.step_slug,
        'step_type', s.step_type,
        'deps', coalesce((
          select jsonb_agg(d.dep_slug order by d.dep_slug collate "C")
          from sluice.deps d where d.flow_slug = s.flow_slug and d.step_slug = s.step_slug
        ), '[]'::jsonb),
        'map_source', to_jsonb(s.map_source),
        'required_input_pattern', s.required_input_pattern,
        'forbidden_input_pattern', s.forbidden_input_pattern,
        'when_unmet', s.when_unmet,
        'when_exhausted', s.when_exhausted,
        'wait', coalesce(s.wait_options, 'null'::jsonb),
        'queue_name', s.queue_name
      ) order by s.step_index)
      from sluice.steps s where s.flow_slug = f.flow_slug
    )
  )
  from sluice.flows f
  where f.flow_slug = stored_shape.flow_slug
$$;

create or replace function sluice.shape_differences(stored jsonb, proposed jsonb)
returns text[]
language plpgsql
immutable
as $$
declare
  v_out text[] := '{}';
  v_stored_count integer := jsonb_array_length(stored -> 'steps');
  v_proposed_count integer := jsonb_array_length(proposed -> 'steps');
  v_key text;
  v_s jsonb;
  v_p jsonb;
begin
  if stored ->> 'queue_mode' is distinct from proposed ->> 'queue_mode' then
    v_out := v_out || format('queue mode: compiled %s, definition %s',
      stored ->> 'queue_mode', proposed ->> 'queue_mode');
  end if;
  for i in 0 .. greatest(v_stored_count, v_proposed_count) - 1 loop
    v_s := stored -> 'steps' -> i;
    v_p := proposed -> 'steps' -> i;
    if v_s is null then
      v_out := v_out || format('step %s: "%s" is new in the definition', i, v_p ->> 'step_slug');
    elsif v_p is null then
      v_out := v_out || format('step %s: "%s" is missing from the definition', i, v_s ->> 'step_slug');
    else
      foreach v_key in array array['step_slug', 'step_type', 'deps', 'map_source',
        'required_input_pattern', 'forbidden_input_pattern', 'when_unmet', 'when_exhausted',
        'queue_name', 'wait']
      loop
        if v_s -> v_key is distinct from v_p -> v_key then
          v_out := v_out || format('step %s ("%s"): %s compiled %s, definition %s',
            i, v_s ->> 'step_slug', v_key, v_s -> v_key, v_p -> v_key);
        end if;
      end loop;
    end if;
  end loop;
  return v_out;
end;
$$;

create or replace function sluice.create_flow(definition jsonb, shape jsonb)
returns void
language plpgsql
as $$
declare
  v_flow text := definition ->> 'flow_slug';
  v_queue text;
  v_generation bigint;
  v_alias text;
begin
  -- Names are one namespace, compared case-insensitively like flow slugs.
  select a.alias into v_alias from sluice.aliases a
  where lower(a.alias) = lower(v_flow) and a.alias <> v_flow
  limit 1;
  if v_alias is not null then
    raise exception 'Cannot compile flow "%": it differs only in case from the alias "%"',
      v_flow, v_alias
      using errcode = 'duplicate_object',
        hint = 'Deploy the flow under a slug no alias uses';
  end if;

  insert into sluice.flows (flow_slug, queue_mode)
  values (v_flow, definition ->> 'queue_mode');

  for v_queue in
    select distinct s ->> 'queue_name' from jsonb_array_elements(shape -> 'steps') s
  loop
    continue when exists (select 1 from sluice.queues q where q.queue_name = v_queue);
    perform sluice.create_queue(v_flow, v_queue);
    insert into sluice.queues (queue_name, ownership, owner_flow_slug)
    values (
      v_queue,
      case when definition ->> 'queue_mode' = 'routed' then 'shared' else 'private' end,
      case when definition ->> 'queue_mode' = 'routed' then null else v_flow end
    );
  end loop;

  insert into sluice.steps (
    flow_slug, step_slug, step_index, step_type, map_source, deps_count,
    required_input_pattern, forbidden_input_pattern, when_unmet, when_exhausted, queue_name,
    wait_options
  )
  select v_flow, sh.value ->> 'step_slug', (sh.ord - 1)::integer, sh.value ->> 'step_type',
    sh.value ->> 'map_source', jsonb_array_length(sh.value -> 'deps'),
    nullif(sh.value -> 'required_input_pattern', 'null'::jsonb),
    nullif(sh.value -> 'forbidden_input_pattern', 'null'::jsonb),
    sh.value ->> 'when_unmet', sh.value ->> 'when_exhausted', sh.value ->> 'queue_name',
    nullif(sh.value -> 'wait', 'null'::jsonb)
  from jsonb_array_elements(shape -> 'steps') with ordinality as sh(value, ord);

  insert into sluice.deps (flow_slug, dep_slug, step_slug)
  select v_flow, d.dep, sh.value ->> 'step_slug'
  from jsonb_array_elements(shape -> 'steps') as sh(value)
  cross join lateral jsonb_array_elements_text(sh.value -> 'deps') as d(dep);

  -- validate_routes refused a name an alias of another flow holds, so the self-alias is new; its
  -- generation continues the name's history (a reset flow's earlier activations stay counted).
  insert into sluice.aliases as a (alias, flow_slug, generation)
  select v_flow, v_flow, coalesce(max(h.generation), 0) + 1
  from sluice.alias_history h
  where h.alias = v_flow
  returning a.generation into v_generation;
  insert into sluice.alias_history (alias, flow_slug, generation)
  values (v_flow, v_flow, v_generation);

  perform sluice.refresh_runtime_options(definition);
end;
$$;

-- As in migration 20261130001800, except that wait steps need no worker: they hold no task.
create or replace function sluice.activate_alias(
  alias text,
  flow_slug text,
  expected_generation bigint,
  force boolean default false,
  activated_by text default null
)
returns bigint
language plpgsql
as $$
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
      and s.step_type not in ('sleep', 'signal')
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

-- As in migration 20261130001300, without wait steps: no worker serves them, none is missing.
create or replace view sluice.route_coverage as
select s.flow_slug, s.step_slug, s.step_index, s.queue_name,
  count(w.worker_id)::integer as live_workers,
  max(w.last_heartbeat_at) as last_heartbeat_at,
  (
    select count(*)::integer from sluice.step_tasks t
    where t.flow_slug = s.flow_slug and t.step_slug = s.step_slug and t.status = 'queued'
  ) as queued_tasks,
  count(w.worker_id) = 0 as missing_worker
from sluice.steps s
left join sluice.live_workers w
  on w.queue_name = s.queue_name
  and w.flow_slug = s.flow_slug
  and (w.step_slug is null or w.step_slug = s.step_slug)
where s.step_type not in ('sleep', 'signal')
group by s.flow_slug, s.step_slug, s.step_index, s.queue_name;

-- Stores what the live attempt of `step_slug` computed for the wait steps that depend on it:
-- waits is a JSON array of {step_slug, key} (a signal wait) or {step_slug, until | seconds}
-- (a sleep). Refuses (and so rolls back the completion) an entry for a step that is not a wait
-- depending on step_slug, a wait of it left without an entry, or a malformed value: the
-- completion of a dependency is the one moment a wait's parameters can be known.
-- The caller holds the run's lock (sluice.complete_tasks).
create function sluice.store_wait_parameters(
  run_id uuid,
  flow_slug text,
  step_slug text,
  waits jsonb
)
returns void
language plpgsql
as $$
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
      and s.step_type in ('sleep', 'signal')
  loop
    select w.value into v_entry
    from jsonb_array_elements(coalesce(store_wait_parameters.waits, '[]'::jsonb)) as w(value)
    where w.value ->> 'step_slug' = v_wait.step_slug;
    if v_entry is null then
      raise exception 'Cannot complete step "%" of run %: the result carries no % of wait step "%", which depends on it',
        store_wait_parameters.step_slug, store_wait_parameters.run_id,
        case v_wait.step_type when 'signal' then 'signal key' else 'due time' end,
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
    update sluice.step_states ss
    set wait_key = v_entry ->> 'key',
      wait_until = (v_entry ->> 'until')::timestamptz,
      wait_seconds = (v_entry ->> 'seconds')::integer
    where ss.run_id = store_wait_parameters.run_id and ss.step_slug = v_wait.step_slug
      and ss.status = 'created';
  end loop;
end;
$$;

-- An instant as JavaScript's Date.prototype.toISOString() writes it (UTC, milliseconds, Z).
create function sluice.iso_instant(at timestamptz)
returns text
language sql
immutable
as $$ select to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- Starts a ready wait step (called by sluice.start_ready_steps, which holds the run's lock):
-- a wait whose dependency was skipped is skipped (it has nothing to wait on; its dependents see
-- it absent), a sleep whose due time has passed completes at once with it, a signal wait whose
-- key already has a signal completes at once with the earliest one's payload, and any other
-- wait moves to 'waiting' (step:waiting) with its key and due time. The caller's loop starts
-- what a completion here releases.
create function sluice.begin_wait(
  run_id uuid,
  flow_slug text,
  step_slug text,
  step_type text,
  deps_count integer,
  wait_options jsonb
)
returns void
language plpgsql
as $$
declare
  v_state sluice.step_states;
  v_until timestamptz;
  v_signal sluice.signals;
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
  -- Normally held already (sluice.complete_tasks takes it before the run lock); a no-op then.
  perform sluice.lock_signal_keys(array[v_state.wait_key]);
  update sluice.step_states ss
  set status = 'waiting', waiting_at = now(),
    wait_until = now() + make_interval(secs => (begin_wait.wait_options ->> 'timeout_seconds')::integer)
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  select * into v_signal from sluice.signals s
  where s.signal_key = v_state.wait_key
  order by s.sent_at, s.signal_id
  limit 1;
  if found then
    update sluice.step_states ss set wait_signal_id = v_signal.signal_id
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      v_signal.payload);
  end if;
end;
$$;

create or replace function sluice.start_ready_steps(run_id uuid)
returns void
language plpgsql
as $$
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

    -- A wait step holds no task and no message: it waits in its step state (sluice.begin_wait).
    if v_step.step_type in ('sleep', 'signal') then
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

create or replace function sluice.complete_tasks(results jsonb)
returns jsonb
language plpgsql
as $$
declare
  v_missing record;
  v_run uuid;
  v_step text;
  v_run_ids uuid[];
  v_step_slugs text[];
  v_released uuid[] := '{}';
  v_state sluice.step_states;
  v_step_type text;
  v_n integer;
  v_queues text[];
  v_ids bigint[];
  v_applied integer := 0;
  v_archive_queues text[] := '{}';
  v_archive_ids bigint[] := '{}';
  v_done_keys text[] := '{}';
  v_keys text[];
  v_stale jsonb;
  v_fenced uuid[];
  v_results jsonb := complete_tasks.results;
begin
  if jsonb_typeof(complete_tasks.results) is distinct from 'array' then
    raise exception 'Cannot complete tasks: results must be a JSON array of {run_id, step_slug, task_index, attempt, worker_id, output}, got %',
      coalesce(jsonb_typeof(complete_tasks.results), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  select x.run_id, x.step_slug, x.task_index into v_missing
  from jsonb_to_recordset(complete_tasks.results)
    as x(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid)
  where x.attempt is null or x.worker_id is null
  limit 1;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): attempt and worker_id are required, the fencing token its claim handed out',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index
      using errcode = 'invalid_parameter_value';
  end if;

  -- A fenced worker's results are set aside before any check: they are all stale.
  select array_agg(w.worker_id) into v_fenced
  from (
    select distinct x.worker_id
    from jsonb_to_recordset(complete_tasks.results) as x(worker_id uuid)
  ) w
  where sluice.worker_fenced(w.worker_id);
  if v_fenced is not null then
    select coalesce(jsonb_agg(r.value order by r.ord), '[]'::jsonb) into v_results
    from jsonb_array_elements(complete_tasks.results) with ordinality as r(value, ord)
    where not ((r.value ->> 'worker_id')::uuid = any (v_fenced));
  end if;

  -- A result naming no task, else one over its flow's output size limit, before anything is
  -- written: one statement for both checks (a missing task is reported first).
  -- The task is looked up by a subquery per result, one index probe each: as a join, planned
  -- for the batch's estimated 100 rows, it could read every task.
  select x.run_id, x.step_slug, x.task_index, x.flow_slug is null as missing, x.bytes,
    f.opt_max_output_bytes as max_bytes
  into v_missing
  from (
    select r.run_id, r.step_slug, r.task_index, octet_length(r.output::text) as bytes,
      (select t.flow_slug from sluice.step_tasks t
        where t.run_id = r.run_id and t.step_slug = r.step_slug
          and t.task_index = r.task_index) as flow_slug
    from jsonb_to_recordset(v_results)
      as r(run_id uuid, step_slug text, task_index integer, output jsonb)
  ) x
  left join sluice.flows f on f.flow_slug = x.flow_slug
  where x.flow_slug is null or x.bytes > f.opt_max_output_bytes
  order by x.flow_slug is null desc
  limit 1;
  if found and v_missing.missing then
    raise exception 'Cannot complete task (run %, step "%", index %): no such task',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index
      using errcode = 'no_data_found';
  end if;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): the output is % bytes as JSON, more than the limit of % bytes (max_output_bytes)',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index, v_missing.bytes,
      v_missing.max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_output_bytes',
        'size', v_missing.bytes, 'max', v_missing.max_bytes)::text;
  end if;

  select array_agg(x.run_id), array_agg(x.step_slug) into v_run_ids, v_step_slugs
  from jsonb_to_recordset(v_results) as x(run_id uuid, step_slug text);

  -- The signal keys of the waits these results start, locked before any run: the first rung of
  -- the ladder (signal keys -> runs -> ...), as sluice.send_signal takes it.
  -- Most batches start no wait: the test is an expression, no statement.
  if jsonb_path_exists(v_results, '$[*].waits[*].key') then
    perform sluice.lock_signal_keys(array(
      select w.key
      from jsonb_to_recordset(v_results) as x(waits jsonb)
      cross join lateral jsonb_to_recordset(coalesce(x.waits, '[]'::jsonb)) as w(key text)
      where w.key is not null
    ));
  end if;

  for v_state in select * from sluice.lock_run_steps(v_run_ids, v_step_slugs, false) loop
    continue when v_state.status <> 'started';
    v_run := v_state.run_id;
    v_step := v_state.step_slug;

    -- Tasks are joined on their whole key, taken from the materialized batch: given
    -- "t.run_id = v_run and t.step_slug = v_step" (or an equal condition the planner derives
    -- through an inlined batch), the plan estimated from statistics in which a step has a task
    -- or two reads every task of the step and matches the indexes afterwards, a cost that grew
    -- with a wide map's width.
    with x as materialized (
      select distinct on (r.task_index) r.run_id, r.step_slug, r.task_index, r.attempt,
        r.worker_id, r.output
      from jsonb_to_recordset(v_results)
        as r(run_id uuid, step_slug text, task_index integer, attempt integer,
          worker_id uuid, output jsonb)
      where r.run_id = v_run and r.step_slug = v_step
      order by r.task_index
    ), done as (
      update sluice.step_tasks t
      set status = 'completed', completed_at = clock_timestamp(), output = x.output
      from x
      where t.run_id = x.run_id and t.step_slug = x.step_slug and t.task_index = x.task_index
        and t.status = 'started' and t.attempts_count = x.attempt
        and t.last_worker_id = x.worker_id
      returning t.queue_name, t.message_id,
        concat_ws('/', t.run_id, t.step_slug, t.task_index, t.attempts_count, t.last_worker_id)
          as fence
    )
    select count(*), array_agg(d.queue_name), array_agg(d.message_id), array_agg(d.fence)
    into v_n, v_queues, v_ids, v_keys
    from done d;

    continue when v_n = 0;
    v_applied := v_applied + v_n;

    -- What the live attempt computed for the wait steps that depend on this step (their key or
    -- due time), stored on them before they become ready below.
    perform sluice.store_wait_parameters(v_run, v_state.flow_slug, v_step, (
      select r.waits
      from jsonb_to_recordset(v_results)
        as r(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid,
          waits jsonb)
      where r.run_id = v_run and r.step_slug = v_step
        and concat_ws('/', r.run_id, r.step_slug, r.task_index, r.attempt, r.worker_id)
          = any (v_keys)
      limit 1
    ));
    v_done_keys := v_done_keys || v_keys;
    v_archive_queues := v_archive_queues || v_queues;
    v_archive_ids := v_archive_ids || v_ids;

    -- v_state is locked, so its remaining_tasks is current. A completing step is updated once,
    -- by complete_step (which zeroes remaining_tasks); only a step that goes on needs the
    -- decrement.
    if v_state.remaining_tasks > v_n then
      update sluice.step_states ss set remaining_tasks = ss.remaining_tasks - v_n
      where ss.run_id = v_run and ss.step_slug = v_step;
    else
      select s.step_type into v_step_type
      from sluice.steps s where s.flow_slug = v_state.flow_slug and s.step_slug = v_step;
      perform sluice.complete_step(
        v_run, v_state.flow_slug, v_step,
        (
          select case
            when v_step_type = 'map' then jsonb_agg(t.output order by t.task_index)
            else (array_agg(t.output))[1]
          end
          from sluice.step_tasks t
          where t.run_id = v_run and t.step_slug = v_step
        )
      );
      if not (v_run = any (v_released)) then
        v_released := v_released || v_run;
      end if;
    end if;
  end loop;

  -- Only a completed step releases dependents or finishes the run; a map task that leaves
  -- siblings running changes neither. Each such run once, after all of its steps.
  foreach v_run in array v_released loop
    perform sluice.start_ready_steps(v_run);
  end loop;

  -- One archive call for the whole batch (per queue), not one per step: each call runs dynamic
  -- SQL that is parsed and planned anew.
  if cardinality(v_archive_ids) > 0 then
    perform sluice.archive_messages(v_archive_queues, v_archive_ids);
  end if;

  select jsonb_agg(jsonb_build_object('run_id', x.run_id, 'step_slug', x.step_slug,
      'task_index', x.task_index, 'attempt', x.attempt) order by x.ord)
  into v_stale
  from rows from (jsonb_to_recordset(complete_tasks.results)
    as (run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid))
    with ordinality as x(run_id, step_slug, task_index, attempt, worker_id, ord)
  where not (concat_ws('/', x.run_id, x.step_slug, x.task_index, x.attempt, x.worker_id)
    = any (v_done_keys));

  return jsonb_build_object('completed', v_applied, 'stale', coalesce(v_stale, '[]'::jsonb));
end;
$$;

create or replace function sluice.fail_run(run_id uuid, step_slug text, error_message text)
returns void
language plpgsql
as $$
begin
  update sluice.runs r
  set status = 'failed', failed_at = now(), error_message = fail_run.error_message
  where r.run_id = fail_run.run_id and r.status = 'started';

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
end;
$$;

-- As in migration 20261130000400, with waiting steps (a signal wait that timed out is skipped).
create or replace function sluice.skip_steps(
  run_id uuid,
  flow_slug text,
  step_slug text,
  skip_reason text,
  cascade_dependents boolean
)
returns void
language plpgsql
as $$
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

-- Cancels the runs among run_ids that are still started, in one statement: the runs, then their
-- unfinished step states (waiting ones included), then their queued and started tasks, then those tasks' messages
-- (archived on each task's own queue). Returns one row per run it cancelled with the number of
-- tasks it cancelled. A started task's attempt is fenced by the change: its report is stale, and
-- its worker learns of it at its next heartbeat (sluice.heartbeat_worker with its running tasks).
--
-- Lock order: the run rows first, ordered by run_id (the locked CTE; rows are locked after the
-- sort), then step states and tasks of those runs only, then messages: the global ladder. Every
-- other writer of these step states and tasks holds their run's lock first, so the order within a
-- rung does not matter; a run that finished while this waited for its lock is re-checked and left
-- out. Every data-changing CTE is read by the final select (PostgreSQL may skip one that is not).
create function sluice.cancel_run_set(run_ids uuid[], reason text)
returns table (cancelled_run_id uuid, cancelled_tasks integer)
language sql
as $$
  with locked as (
    select r.run_id from sluice.runs r
    where r.run_id = any (cancel_run_set.run_ids) and r.status = 'started'
    order by r.run_id
    for update
  ),
  runs_cancelled as (
    update sluice.runs r
    set status = 'cancelled', cancelled_at = now(), cancel_reason = cancel_run_set.reason,
      cancelled_by = current_user
    from locked l
    where r.run_id = l.run_id
    returning r.run_id
  ),
  steps_cancelled as (
    update sluice.step_states ss
    set status = 'cancelled', cancelled_at = now()
    from runs_cancelled c
    where ss.run_id = c.run_id and ss.status in ('created', 'started', 'waiting')
    returning ss.run_id
  ),
  tasks_cancelled as (
    update sluice.step_tasks t
    set status = 'cancelled', cancelled_at = now()
    from runs_cancelled c
    where t.run_id = c.run_id and t.status in ('queued', 'started')
    returning t.run_id, t.queue_name, t.message_id
  ),
  archived as (
    select count(a.id) as messages
    from (
      select t.queue_name, array_agg(t.message_id) as ids
      from tasks_cancelled t
      where t.message_id is not null
      group by t.queue_name
    ) q
    cross join lateral pgmq.archive(q.queue_name, q.ids) as a(id)
  )
  select c.run_id,
    (select count(*)::integer from tasks_cancelled t where t.run_id = c.run_id)
  from runs_cancelled c
  cross join (select count(*) from steps_cancelled) s
  cross join archived
  order by c.run_id
$$;

-- As in migration 20261130001700, with step:waiting (its key or due time).
create or replace function sluice.step_event(ss sluice.step_states, status text)
returns jsonb
language plpgsql
immutable
as $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'step:started', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'tasks', ss.initial_tasks, 'at', ss.started_at)
    when 'waiting' then jsonb_build_object('type', 'step:waiting', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'key', ss.wait_key, 'until', ss.wait_until,
      'at', ss.waiting_at)
    when 'completed' then jsonb_build_object('type', 'step:completed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'output', ss.output, 'at', ss.completed_at)
    when 'failed' then jsonb_build_object('type', 'step:failed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'errorMessage', ss.error_message, 'at', ss.failed_at)
    when 'skipped' then jsonb_build_object('type', 'step:skipped', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'reason', ss.skip_reason, 'errorMessage', ss.error_message,
      'at', ss.skipped_at)
    when 'cancelled' then jsonb_build_object('type', 'step:cancelled', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'at', ss.cancelled_at)
  end;
end;
$$;

-- As in migration 20261130001700, with a cancelled run's end and a retried run's last retry
-- (after the events of what it kept, before those of what it started again), and each wait's
-- step:waiting.
create or replace function sluice.run_events(run_id uuid)
returns jsonb
language sql
stable
as $$
  select jsonb_agg(e.event order by e.last, e.at, e.step_index, e.stage)
  from sluice.runs r
  cross join lateral (
    select sluice.run_event(r, 'started') as event, false as last, r.started_at as at,
      -1 as step_index, 0 as stage
    union all
    select sluice.run_event(r, 'retried'), false, r.retried_at, -1, 0
    where r.retry_count > 0
    union all
    select sluice.run_event(r, r.status), true,
      coalesce(r.completed_at, r.failed_at, r.cancelled_at), -1, 0
    where r.status <> 'started'
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage
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
      select sluice.step_event(ss, ss.status), 2
      where ss.status not in ('created', 'started', 'waiting')
    ) x
    where ss.run_id = r.run_id
  ) e
  where r.run_id = run_events.run_id
$$;

-- Sends a signal: records it under signal_id (idempotent: a signal_id sent before changes
-- nothing and answers 'duplicate'; the same id with another key is refused) and completes every
-- step waiting on `key` with `payload` as its output, starting their dependents, all in the
-- caller's transaction (a rolled-back signal is never seen). A signal no step waits for yet is
-- kept: a wait that starts on its key later completes at once with the earliest kept signal.
-- Answers {signal_id, outcome: sent | duplicate, released: how many waiting steps it completed}.
-- Lock order: the key's advisory lock, then the runs of the waiting steps (sluice.lock_run_steps,
-- run_id order), their step states, what starting their dependents takes.
create function sluice.send_signal(key text, payload jsonb, signal_id text)
returns jsonb
language plpgsql
as $$
declare
  v_existing sluice.signals;
  v_run_ids uuid[];
  v_slugs text[];
  v_state sluice.step_states;
  v_released integer := 0;
  v_runs uuid[] := '{}';
  v_run uuid;
begin
  if send_signal.key is null
    or char_length(send_signal.key) not between 1 and sluice.max_signal_key_length()
  then
    raise exception 'Cannot send signal %: the key must be a string of 1 to % characters, got %',
      coalesce(send_signal.signal_id, 'null'), sluice.max_signal_key_length(),
      coalesce(left(send_signal.key, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if send_signal.signal_id is null
    or char_length(send_signal.signal_id) not between 1 and sluice.max_signal_key_length()
  then
    raise exception 'Cannot send signal with key "%": the signal id must be a string of 1 to % characters, got %',
      left(send_signal.key, 100), sluice.max_signal_key_length(),
      coalesce(left(send_signal.signal_id, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  perform sluice.lock_signal_keys(array[send_signal.key]);

  insert into sluice.signals (signal_id, signal_key, payload)
  values (send_signal.signal_id, send_signal.key, coalesce(send_signal.payload, 'null'::jsonb))
  on conflict on constraint signals_pkey do nothing;
  if not found then
    select * into v_existing from sluice.signals s where s.signal_id = send_signal.signal_id;
    if v_existing.signal_key <> send_signal.key then
      raise exception 'Cannot send signal "%" with key "%": that signal id was sent with key "%"',
        send_signal.signal_id, left(send_signal.key, 100), left(v_existing.signal_key, 100)
        using errcode = 'unique_violation';
    end if;
    return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'duplicate',
      'released', 0);
  end if;

  select array_agg(ss.run_id), array_agg(ss.step_slug) into v_run_ids, v_slugs
  from sluice.step_states ss
  where ss.status = 'waiting' and ss.wait_key = send_signal.key;

  if v_run_ids is not null then
    for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, false) loop
      continue when v_state.status <> 'waiting' or v_state.wait_key <> send_signal.key;
      update sluice.step_states ss set wait_signal_id = send_signal.signal_id
      where ss.run_id = v_state.run_id and ss.step_slug = v_state.step_slug;
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        coalesce(send_signal.payload, 'null'::jsonb));
      v_released := v_released + 1;
      if not (v_state.run_id = any (v_runs)) then
        v_runs := v_runs || v_state.run_id;
      end if;
    end loop;
    foreach v_run in array v_runs loop
      perform sluice.start_ready_steps(v_run);
    end loop;
  end if;

  return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'sent',
    'released', v_released);
end;
$$;

-- Releases the waits that are due (at most batch_size, earliest first): a sleep completes with
-- its due time (an ISO instant) as its output; a signal wait past its timeout follows its
-- on_timeout: 'fail' fails the run, 'skip' skips the step (reason wait_timed_out; dependents run
-- without it), 'value' completes it with the timeout value. Dependents start in the same
-- transaction. Every worker's heartbeat calls it; pg_cron may too. Runs another transaction
-- holds are skipped (their waits are released by a later call), and each wait is re-checked
-- under its run's lock: many concurrent sweepers release each wait exactly once. Returns how
-- many waits it released.
create function sluice.release_due_waits(batch_size integer default 100)
returns integer
language plpgsql
as $$
declare
  v_run_ids uuid[];
  v_slugs text[];
  v_state sluice.step_states;
  v_step sluice.steps;
  v_released integer := 0;
  v_runs uuid[] := '{}';
  v_run uuid;
begin
  select array_agg(c.run_id), array_agg(c.step_slug) into v_run_ids, v_slugs
  from (
    select ss.run_id, ss.step_slug from sluice.step_states ss
    where ss.status = 'waiting' and ss.wait_until <= now()
    order by ss.wait_until
    limit greatest(coalesce(release_due_waits.batch_size, 100), 1)
  ) c;
  if v_run_ids is null then
    return 0;
  end if;

  for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, true) loop
    continue when v_state.status <> 'waiting' or v_state.wait_until > now();
    select * into v_step from sluice.steps s
    where s.flow_slug = v_state.flow_slug and s.step_slug = v_state.step_slug;
    -- A run failed by an earlier wait of this loop is no longer started.
    continue when (select r.status from sluice.runs r where r.run_id = v_state.run_id)
      <> 'started';
    v_released := v_released + 1;
    if v_step.step_type = 'sleep' then
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        to_jsonb(sluice.iso_instant(v_state.wait_until)));
    elsif v_step.wait_options ->> 'on_timeout' = 'fail' then
      perform sluice.fail_run(v_state.run_id, v_state.step_slug,
        format('step "%s" timed out after %s s waiting for a signal with key "%s"',
          v_state.step_slug, v_step.wait_options ->> 'timeout_seconds', v_state.wait_key));
      continue;
    elsif v_step.wait_options ->> 'on_timeout' = 'skip' then
      perform sluice.skip_steps(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        'wait_timed_out', false);
    else
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        v_step.wait_options -> 'timeout_value');
    end if;
    if not (v_state.run_id = any (v_runs)) then
      v_runs := v_runs || v_state.run_id;
    end if;
  end loop;

  foreach v_run in array v_runs loop
    perform sluice.start_ready_steps(v_run);
  end loop;
  return v_released;
end;
$$;

-- As every migration since 20261130001500: nothing here is executable or readable by PUBLIC.
revoke all on all routines in schema sluice from public;
revoke all on sluice.signals from public;
