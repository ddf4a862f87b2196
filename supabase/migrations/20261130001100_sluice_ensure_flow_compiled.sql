-- sluice.ensure_flow_compiled: the only compiler (docs/architecture.md#startup-compilation). A
-- worker sends the complete ordered definition (docs/internals/contracts.md §1) at startup, before
-- it tracks its worker function or registers itself. Everything is validated before anything is
-- written; under a transaction advisory lock on the normalized concrete slug (and, before a flow is
-- created, one per queue name it uses, in name order) the outcome is then:
--   absent    -> create flow, queues, registry rows, steps, deps, self-alias -> compiled
--   same shape -> runtime options refreshed                                  -> verified
--   different -> nothing changes                                              -> mismatch
-- In 'development' only, a mismatch recompiles destructively once the flow's live workers have
-- drained: the first call deprecates them and answers 'draining'; the caller waits and calls
-- again; when none is alive the flow and its data are replaced, its aliases kept -> recompiled.

-- Raises when value (already a whole number or null) is a timeout longer than 2147483 seconds
-- (about 24.8 days): a worker arms a timer of timeout * 1000 ms, and a longer timer fires at once.
-- The DSL refuses the same bound (MAX_TIMEOUT_SECONDS in src/dsl/_validate.ts).
create function sluice.check_timeout(value jsonb, what text)
returns void
language plpgsql
immutable
as $$
begin
  if value is not null and value <> 'null'::jsonb and value::text::numeric > 2147483 then
    raise exception 'Invalid flow definition: % must be at most 2147483 seconds (about 24.8 days, the longest worker timer), got %', what, value
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Raises unless value is null or a whole number >= minimum.
create function sluice.check_whole_number(value jsonb, minimum integer, what text)
returns void
language plpgsql
immutable
as $$
begin
  if value is null or value = 'null'::jsonb then
    return;
  end if;
  if jsonb_typeof(value) <> 'number' or value::text::numeric <> trunc(value::text::numeric)
    or value::text::numeric < minimum or value::text::numeric > 2147483647
  then
    raise exception 'Invalid flow definition: % must be a whole number >= %, got %', what, minimum, value
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

create function sluice.check_enum(value jsonb, allowed text[], what text)
returns void
language plpgsql
immutable
as $$
begin
  if value is not null and (jsonb_typeof(value) <> 'string' or not (value #>> '{}' = any (allowed)))
  then
    raise exception 'Invalid flow definition: % must be one of %, got %', what, allowed, value
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Validates a definition's structure; raises naming the first offending value.
create function sluice.validate_definition(definition jsonb)
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
    perform sluice.check_enum(coalesce(v_step -> 'step_type', 'null'), array['single', 'map'],
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

    v_slugs := v_slugs || v_slug;
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

-- The shape compilation compares, from a definition: routes as SQL derives them (routed flows
-- keep their supplied ones), defaults filled in, runtime options left out.
create function sluice.definition_shape(definition jsonb)
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

-- The same shape, read from a compiled flow.
create function sluice.stored_shape(flow_slug text)
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
        'queue_name', s.queue_name
      ) order by s.step_index)
      from sluice.steps s where s.flow_slug = f.flow_slug
    )
  )
  from sluice.flows f
  where f.flow_slug = stored_shape.flow_slug
$$;

-- Human-readable differences between two shapes; empty when they are equal.
create function sluice.shape_differences(stored jsonb, proposed jsonb)
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
        'queue_name']
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

-- Checks routes and queue ownership of a definition that is about to be created; raises on the
-- first problem. Private queues (plain and step-queued flows) must not exist at all yet: sluice
-- never adopts a queue silently. Shared queues (routed flows) are reused when sluice registered
-- them as shared, created when absent, and rejected otherwise.
create function sluice.validate_routes(definition jsonb, shape jsonb)
returns void
language plpgsql
as $$
declare
  v_flow text := definition ->> 'flow_slug';
  v_mode text := definition ->> 'queue_mode';
  v_i integer;
  v_slug text;
  v_supplied text;
  v_queue text;
  v_other text;
  v_registry sluice.queues;
  v_meta text;
begin
  for v_i in 0 .. jsonb_array_length(shape -> 'steps') - 1 loop
    v_slug := shape -> 'steps' -> v_i ->> 'step_slug';
    v_queue := shape -> 'steps' -> v_i ->> 'queue_name';
    v_supplied := definition -> 'routes' -> v_i ->> 'queue_name';
    if v_supplied is distinct from v_queue then
      raise exception 'Invalid flow definition: the route of step "%" of flow "%" is "%", but SQL derives "%"',
        v_slug, v_flow, v_supplied, v_queue
        using errcode = 'invalid_parameter_value';
    end if;
    -- One rule for generated and routed names (sluice.is_valid_queue_name). Checked here rather
    -- than left to pgmq.validate_queue_name: PGMQ 1.5.1 counts characters and names 48 as the
    -- maximum although 47 bytes is the limit.
    if not sluice.is_valid_queue_name(v_queue) then
      raise exception 'Invalid flow definition: queue "%" of step "%" of flow "%" (% bytes) must be ASCII lowercase letters, digits and underscores, at most % bytes',
        v_queue, v_slug, v_flow, octet_length(v_queue), sluice.max_queue_name_length()
        using errcode = 'invalid_parameter_value';
    end if;
    begin
      perform pgmq.validate_queue_name(v_queue);
      perform pgmq.format_table_name(v_queue, 'q');
    exception when others then
      raise exception 'Invalid flow definition: queue "%" of step "%" of flow "%": %',
        v_queue, v_slug, v_flow, sqlerrm
        using errcode = 'invalid_parameter_value';
    end;

    select s.value ->> 'step_slug' into v_other
    from jsonb_array_elements(shape -> 'steps') with ordinality as s(value, ord)
    where s.ord - 1 < v_i and s.value ->> 'queue_name' = v_queue
    limit 1;
    if v_other is not null and v_mode = 'step' then
      raise exception 'Invalid flow definition: steps "%" and "%" of flow "%" both resolve to queue "%"',
        v_other, v_slug, v_flow, v_queue
        using errcode = 'invalid_parameter_value';
    end if;
    continue when v_other is not null;

    select * into v_registry from sluice.queues q where q.queue_name = v_queue;
    select m.queue_name into v_meta from pgmq.meta m where lower(m.queue_name) = v_queue limit 1;
    if v_mode <> 'routed' then
      if v_registry.queue_name is not null then
        raise exception 'Cannot compile flow "%": queue "%" of step "%" is already registered as % to %',
          v_flow, v_queue, v_slug, v_registry.ownership,
          coalesce(format('flow "%s"', v_registry.owner_flow_slug), 'no flow')
          using errcode = 'duplicate_object';
      end if;
      if v_meta is not null then
        raise exception 'Cannot compile flow "%": queue "%" of step "%" already exists in PGMQ (as "%") but no sluice flow owns it; sluice never adopts a queue silently',
          v_flow, v_queue, v_slug, v_meta
          using errcode = 'duplicate_object',
            hint = 'Drop that queue or deploy the flow under another concrete slug';
      end if;
    elsif v_registry.ownership = 'private' then
      raise exception 'Cannot compile flow "%": queue "%" of step "%" is private to flow "%"',
        v_flow, v_queue, v_slug, v_registry.owner_flow_slug
        using errcode = 'duplicate_object';
    elsif v_registry.queue_name is null and v_meta is not null then
      raise exception 'Cannot compile flow "%": shared queue "%" of step "%" already exists in PGMQ (as "%") but sluice did not create it; sluice never adopts a queue silently',
        v_flow, v_queue, v_slug, v_meta
        using errcode = 'duplicate_object';
    end if;
  end loop;

  if exists (
    select 1 from sluice.aliases a where a.alias = v_flow and a.flow_slug <> v_flow
  ) then
    raise exception 'Cannot compile flow "%": an alias of that name already points at flow "%"',
      v_flow, (select a.flow_slug from sluice.aliases a where a.alias = v_flow)
      using errcode = 'duplicate_object';
  end if;
end;
$$;

-- Flows of different slugs can name the same queue (a shared queue of routed flows, or colliding
-- private names), so the flow lock alone does not keep two of them from creating it at once, and
-- PGMQ 1.5.1 does not serialize creators (the loser fails on a catalog unique index). One lock per
-- queue name, taken in name order after the flow lock and held to commit, makes the later creator
-- wait; its validate_routes then sees the winner's queue and registry row. Lock order: flow, then
-- queue names ascending.
create function sluice.lock_queue_names(shape jsonb)
returns void
language plpgsql
as $$
declare
  v_queue text;
begin
  for v_queue in
    select distinct s ->> 'queue_name' from jsonb_array_elements(shape -> 'steps') s order by 1
  loop
    perform pg_advisory_xact_lock(hashtextextended('sluice.queue:' || v_queue, 0));
  end loop;
end;
$$;

-- Writes a validated definition: flow, queues (through sluice.create_queue) and their registry
-- rows, steps, deps, self-alias. The self-alias continues its name's generations, and a flow may
-- not differ only in case from an alias.
-- The caller holds the flow lock and the queue-name locks (sluice.lock_queue_names).
create function sluice.create_flow(definition jsonb, shape jsonb)
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
    required_input_pattern, forbidden_input_pattern, when_unmet, when_exhausted, queue_name
  )
  select v_flow, sh.value ->> 'step_slug', (sh.ord - 1)::integer, sh.value ->> 'step_type',
    sh.value ->> 'map_source', jsonb_array_length(sh.value -> 'deps'),
    nullif(sh.value -> 'required_input_pattern', 'null'::jsonb),
    nullif(sh.value -> 'forbidden_input_pattern', 'null'::jsonb),
    sh.value ->> 'when_unmet', sh.value ->> 'when_exhausted', sh.value ->> 'queue_name'
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

-- Runtime options are not shape: compilation writes them, and a verified startup applies the
-- definition's values. A flow-level null means the default. Event options (their columns come
-- with 20261130001700_sluice_run_events.sql) are checked here, before the first write of the
-- definition's options.
create function sluice.refresh_runtime_options(definition jsonb)
returns void
language plpgsql
as $$
declare
  v_flow text := definition ->> 'flow_slug';
begin
  if coalesce(jsonb_typeof(definition #> '{options,events}'), 'null') not in ('null', 'boolean')
  then
    raise exception 'Invalid flow definition: options.events of flow "%" must be true, false or null, got %',
      v_flow, definition #> '{options,events}'
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_whole_number(definition #> '{options,progress_interval}', 0,
    format('options.progress_interval of flow "%s"', v_flow));
  perform sluice.check_whole_number(definition #> array['options', o], 1,
    format('options.%s of flow "%s"', o, v_flow))
  from unnest(array['max_input_bytes', 'max_output_bytes', 'max_map_tasks']) as o;

  update sluice.flows f
  set (opt_max_attempts, opt_base_delay, opt_timeout, opt_events, opt_progress_interval,
      opt_max_input_bytes, opt_max_output_bytes, opt_max_map_tasks)
    = (o.max_attempts, o.base_delay, o.timeout, o.events, o.progress_interval,
      o.max_input_bytes, o.max_output_bytes, o.max_map_tasks)
  from (
    select coalesce((definition #>> '{options,max_attempts}')::integer, 3) as max_attempts,
      coalesce((definition #>> '{options,base_delay}')::integer, 1) as base_delay,
      coalesce((definition #>> '{options,timeout}')::integer, 60) as timeout,
      coalesce((definition #>> '{options,events}')::boolean, true) as events,
      coalesce((definition #>> '{options,progress_interval}')::integer, 1) as progress_interval,
      coalesce((definition #>> '{options,max_input_bytes}')::integer,
        sluice.default_max_json_bytes()) as max_input_bytes,
      coalesce((definition #>> '{options,max_output_bytes}')::integer,
        sluice.default_max_json_bytes()) as max_output_bytes,
      coalesce((definition #>> '{options,max_map_tasks}')::integer,
        sluice.default_max_map_tasks()) as max_map_tasks
  ) o
  where f.flow_slug = v_flow
    and (f.opt_max_attempts, f.opt_base_delay, f.opt_timeout, f.opt_events,
      f.opt_progress_interval, f.opt_max_input_bytes, f.opt_max_output_bytes,
      f.opt_max_map_tasks)
      is distinct from (o.max_attempts, o.base_delay, o.timeout, o.events, o.progress_interval,
        o.max_input_bytes, o.max_output_bytes, o.max_map_tasks);

  update sluice.steps s
  set opt_max_attempts = (e.step #>> '{options,max_attempts}')::integer,
    opt_base_delay = (e.step #>> '{options,base_delay}')::integer,
    opt_timeout = (e.step #>> '{options,timeout}')::integer,
    opt_start_delay = (e.step #>> '{options,start_delay}')::integer
  from jsonb_array_elements(definition -> 'steps') as e(step)
  where s.flow_slug = v_flow
    and s.step_slug = e.step ->> 'step_slug'
    and (s.opt_max_attempts, s.opt_base_delay, s.opt_timeout, s.opt_start_delay)
      is distinct from (
        (e.step #>> '{options,max_attempts}')::integer,
        (e.step #>> '{options,base_delay}')::integer,
        (e.step #>> '{options,timeout}')::integer,
        (e.step #>> '{options,start_delay}')::integer);
end;
$$;

-- A development recompile replaces the flow `old_slug` (the stored spelling of the definition's
-- slug). The aliases that point at it from other names are set aside and put back on the new
-- flow, generation and all, so its callers keep their name; the caller holds the flow lock.
create function sluice.recreate_flow(old_slug text, definition jsonb, shape jsonb)
returns void
language plpgsql
as $$
declare
  v_kept sluice.aliases[];
begin
  with kept as (
    delete from sluice.aliases a
    where a.flow_slug = recreate_flow.old_slug and a.alias <> recreate_flow.old_slug
    returning a.*
  )
  select array_agg(k) into v_kept from kept k;
  perform sluice.delete_flow_and_data(old_slug, force => true);
  perform sluice.lock_queue_names(shape);
  perform sluice.validate_routes(definition, shape);
  perform sluice.create_flow(definition, shape);
  insert into sluice.aliases (alias, flow_slug, generation, activated_at)
  select k.alias, definition ->> 'flow_slug', k.generation, k.activated_at
  from unnest(v_kept) k;
end;
$$;

-- The flow's current compile_generation (see sluice.flows), which ensure_flow_compiled answers.
create function sluice.compile_generation(flow_slug text)
returns bigint
language sql
stable
as $$
  select f.compile_generation from sluice.flows f where f.flow_slug = compile_generation.flow_slug
$$;

-- Every outcome but 'draining' and 'mismatch' answers the flow's compile_generation, which the
-- worker registers with. A development recompile goes through sluice.recreate_flow and so keeps
-- the flow's aliases. Security definer: it creates queues (sluice.create_queue; see
-- 20261130001500_sluice_privileges.sql).
create function sluice.ensure_flow_compiled(definition jsonb, environment text)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_flow text;
  v_shape jsonb;
  v_stored jsonb;
  v_differences text[];
  v_live integer;
begin
  if environment is null or environment not in ('production', 'development') then
    raise exception 'Cannot compile flow: environment must be ''production'' or ''development'', got %',
      coalesce(quote_literal(environment), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.validate_definition(definition);
  v_flow := definition ->> 'flow_slug';
  v_shape := sluice.definition_shape(definition);

  -- Concurrent startups of one flow serialize here, so exactly one of them creates it.
  perform pg_advisory_xact_lock(hashtextextended('sluice.flow:' || lower(v_flow), 0));

  select f.flow_slug into v_flow from sluice.flows f where lower(f.flow_slug) = lower(v_flow);
  if v_flow is null then
    v_flow := definition ->> 'flow_slug';
    perform sluice.lock_queue_names(v_shape);
    perform sluice.validate_routes(definition, v_shape);
    perform sluice.create_flow(definition, v_shape);
    return jsonb_build_object('outcome', 'compiled', 'differences', '[]'::jsonb,
      'generation', sluice.compile_generation(v_flow));
  end if;

  if v_flow <> definition ->> 'flow_slug' then
    v_differences := array[format('flow slug: compiled "%s", definition "%s" (slugs are compared case-insensitively)',
      v_flow, definition ->> 'flow_slug')];
  else
    v_stored := sluice.stored_shape(v_flow);
    v_differences := sluice.shape_differences(v_stored, v_shape);
  end if;

  if cardinality(v_differences) = 0 then
    perform sluice.refresh_runtime_options(definition);
    return jsonb_build_object('outcome', 'verified', 'differences', '[]'::jsonb,
      'generation', sluice.compile_generation(v_flow));
  end if;

  if environment = 'production' then
    return jsonb_build_object('outcome', 'mismatch', 'differences', to_jsonb(v_differences));
  end if;

  -- Development: old workers must stop before their flow disappears under them.
  with deprecated as (
    update sluice.workers w set deprecated_at = coalesce(w.deprecated_at, now())
    where w.worker_id in (
      select lw.worker_id from sluice.live_workers lw where lw.flow_slug = v_flow
    )
    returning 1
  )
  select count(*) into v_live from deprecated;
  if v_live > 0 then
    return jsonb_build_object('outcome', 'draining', 'live_workers', v_live,
      'differences', to_jsonb(v_differences));
  end if;

  -- The recreated flow takes a new compile_generation: every worker registered for the old one,
  -- live or paused past the heartbeat TTL, is fenced from here on (sluice.worker_fenced).
  perform sluice.recreate_flow(v_flow, definition, v_shape);
  v_flow := definition ->> 'flow_slug';
  return jsonb_build_object('outcome', 'recompiled', 'differences', to_jsonb(v_differences),
    'generation', sluice.compile_generation(v_flow));
end;
$$;
