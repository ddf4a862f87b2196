-- sluice.check_start_options, as the migrations create it (last defined in supabase/migrations/20261208002943_sluice_merge_flow_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only. As in migration 20261207001300, and
-- `debounce` (check_debounce_option), which takes neither an idempotency key nor a run id, and
-- `priority` (check_priority_option), and `concurrency_key` (a string like an idempotency key; a
-- debounced run does not exist before it is due, so it takes its key from its input's path only).
CREATE OR REPLACE FUNCTION sluice.check_start_options(flow_ref text, options jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_unknown text;
  v_key jsonb := check_start_options.options -> 'idempotency_key';
  v_concurrency_key jsonb := check_start_options.options -> 'concurrency_key';
begin
  if check_start_options.options is null then
    return;
  end if;
  if jsonb_typeof(check_start_options.options) <> 'object' then
    raise exception 'Cannot start flow "%": options must be a JSON object, got %',
      check_start_options.flow_ref, jsonb_typeof(check_start_options.options)
      using errcode = 'invalid_parameter_value';
  end if;
  select k into v_unknown
  from jsonb_object_keys(check_start_options.options) k
  where k not in ('idempotency_key', 'debounce', 'priority', 'concurrency_key')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: idempotency_key, debounce, priority, concurrency_key';
  end if;
  if v_key is not null and jsonb_typeof(v_key) <> 'null' and (jsonb_typeof(v_key) <> 'string'
      or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": idempotency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(), left(v_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
  if v_concurrency_key is not null and jsonb_typeof(v_concurrency_key) <> 'null'
    and (jsonb_typeof(v_concurrency_key) <> 'string'
      or length(v_concurrency_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": concurrency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(),
      left(v_concurrency_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
  if check_start_options.options ? 'priority' then
    perform sluice.check_priority_option(check_start_options.flow_ref,
      check_start_options.options -> 'priority');
  end if;
  if check_start_options.options ? 'debounce' then
    perform sluice.check_debounce_option(check_start_options.flow_ref,
      check_start_options.options -> 'debounce');
    if v_key is not null and jsonb_typeof(v_key) <> 'null' then
      raise exception 'Cannot start flow "%": debounce and idempotency_key cannot be combined',
        check_start_options.flow_ref
        using errcode = 'invalid_parameter_value',
          hint = 'A debounced start already returns the pending run of its key';
    end if;
    if v_concurrency_key is not null and jsonb_typeof(v_concurrency_key) <> 'null' then
      raise exception 'Cannot start flow "%": debounce and concurrency_key cannot be combined',
        check_start_options.flow_ref
        using errcode = 'invalid_parameter_value',
          hint = 'A debounced run can take its concurrency key from a path into its input (the step''s concurrency.key)';
    end if;
  end if;
end;
$$;
