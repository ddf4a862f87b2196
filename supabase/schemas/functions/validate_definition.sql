-- sluice.validate_definition, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
