-- sluice.validate_wait_step, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
