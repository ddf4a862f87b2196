-- sluice.check_debounce_option, as the migrations create it (last defined in supabase/migrations/20261207232000_sluice_debounced_start.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Validates the `debounce` start option, naming the offending value: an object
-- {key, window_seconds, max_wait_seconds?} with a key of 1 to 255 characters, a window of 1 to
-- max_debounce_seconds() whole seconds and a max wait of window_seconds to the same maximum.
CREATE OR REPLACE FUNCTION sluice.check_debounce_option(flow_ref text, debounce jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_unknown text;
  v_key jsonb := check_debounce_option.debounce -> 'key';
  v_window jsonb := check_debounce_option.debounce -> 'window_seconds';
  v_max jsonb := check_debounce_option.debounce -> 'max_wait_seconds';
begin
  if jsonb_typeof(check_debounce_option.debounce) is distinct from 'object' then
    raise exception 'Cannot start flow "%": debounce must be a JSON object {key, window_seconds}, got %',
      check_debounce_option.flow_ref, coalesce(jsonb_typeof(check_debounce_option.debounce), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select k into v_unknown
  from jsonb_object_keys(check_debounce_option.debounce) k
  where k not in ('key', 'window_seconds', 'max_wait_seconds')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown debounce option "%"',
      check_debounce_option.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value',
        hint = 'Known options: key, window_seconds, max_wait_seconds';
  end if;
  if jsonb_typeof(v_key) is distinct from 'string'
    or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length()
  then
    raise exception 'Cannot start flow "%": debounce.key must be a string of 1 to % characters, got %',
      check_debounce_option.flow_ref, sluice.max_idempotency_key_length(),
      coalesce(left(v_key::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
  if jsonb_typeof(v_window) is distinct from 'number'
    or (v_window #>> '{}')::numeric <> trunc((v_window #>> '{}')::numeric)
    or (v_window #>> '{}')::numeric not between 1 and sluice.max_debounce_seconds()
  then
    raise exception 'Cannot start flow "%": debounce.window_seconds must be a whole number of seconds from 1 to %, got %',
      check_debounce_option.flow_ref, sluice.max_debounce_seconds(),
      coalesce(left(v_window::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
  if v_max is not null and (jsonb_typeof(v_max) <> 'number'
    or (v_max #>> '{}')::numeric <> trunc((v_max #>> '{}')::numeric)
    or (v_max #>> '{}')::numeric not between (v_window #>> '{}')::numeric
      and sluice.max_debounce_seconds())
  then
    raise exception 'Cannot start flow "%": debounce.max_wait_seconds must be a whole number of seconds from window_seconds (%) to %, got %',
      check_debounce_option.flow_ref, v_window #>> '{}', sluice.max_debounce_seconds(),
      left(v_max::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
