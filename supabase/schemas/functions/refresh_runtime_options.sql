-- sluice.refresh_runtime_options, as the migrations create it (last defined in supabase/migrations/20261207234003_sluice_rate_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Runtime options are not shape: compilation writes them, and a verified startup applies the
-- definition's values. A flow-level null means the default. Event options (their columns come
-- with 20261130001700_sluice_run_events.sql) and concurrency and rate limits are checked here, before the
-- first write of the definition's options.
CREATE OR REPLACE FUNCTION sluice.refresh_runtime_options(definition jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
  perform sluice.check_concurrency_options(definition);

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
    opt_start_delay = (e.step #>> '{options,start_delay}')::integer,
    opt_concurrency_limit = (e.step #>> '{options,concurrency_limit}')::integer,
    opt_concurrency_key = sluice.concurrency_key_path(e.step #> '{options,concurrency_key}'),
    opt_rate_limit = (e.step #>> '{options,rate_limit}')::integer,
    opt_rate_period = (e.step #>> '{options,rate_period}')::integer
  from jsonb_array_elements(definition -> 'steps') as e(step)
  where s.flow_slug = v_flow
    and s.step_slug = e.step ->> 'step_slug'
    and (s.opt_max_attempts, s.opt_base_delay, s.opt_timeout, s.opt_start_delay,
        s.opt_concurrency_limit, s.opt_concurrency_key, s.opt_rate_limit, s.opt_rate_period)
      is distinct from (
        (e.step #>> '{options,max_attempts}')::integer,
        (e.step #>> '{options,base_delay}')::integer,
        (e.step #>> '{options,timeout}')::integer,
        (e.step #>> '{options,start_delay}')::integer,
        (e.step #>> '{options,concurrency_limit}')::integer,
        sluice.concurrency_key_path(e.step #> '{options,concurrency_key}'),
        (e.step #>> '{options,rate_limit}')::integer,
        (e.step #>> '{options,rate_period}')::integer);
end;
$$;
