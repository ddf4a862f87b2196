-- sluice.check_run_input, as the migrations create it (last defined in supabase/migrations/20261207232000_sluice_debounced_start.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Refuses an input create_run would refuse for the concrete flow `flow_slug` (null, over the
-- flow's max_input_bytes, not an array for a root map), with create_run's errors: a debounced
-- start checks its input when it is made, not only when its run is created.
CREATE OR REPLACE FUNCTION sluice.check_run_input(flow_slug text, input jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_max_bytes integer;
  v_bytes bigint;
  v_root_map text;
begin
  if check_run_input.input is null then
    raise exception 'Cannot start flow "%": input is null; pass a JSON value', check_run_input.flow_slug
      using errcode = 'null_value_not_allowed';
  end if;
  select f.opt_max_input_bytes into v_max_bytes
  from sluice.flows f where f.flow_slug = check_run_input.flow_slug;
  v_bytes := octet_length(check_run_input.input::text);
  if v_bytes > v_max_bytes then
    raise exception 'Cannot start flow "%": the input is % bytes as JSON, more than the limit of % bytes (max_input_bytes)',
      check_run_input.flow_slug, v_bytes, v_max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_input_bytes',
        'size', v_bytes, 'max', v_max_bytes)::text;
  end if;
  select s.step_slug into v_root_map
  from sluice.steps s
  where s.flow_slug = check_run_input.flow_slug and s.step_type = 'map' and s.deps_count = 0
  order by s.step_index
  limit 1;
  if v_root_map is not null and jsonb_typeof(check_run_input.input) <> 'array' then
    raise exception 'Cannot start flow "%": root map step "%" maps over the run input, which must be an array, got %',
      check_run_input.flow_slug, v_root_map, jsonb_typeof(check_run_input.input)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
