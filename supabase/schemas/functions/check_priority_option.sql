-- sluice.check_priority_option, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Validates the `priority` start option, naming the offending value: a whole number from
-- -max_priority() to max_priority().
CREATE OR REPLACE FUNCTION sluice.check_priority_option(flow_ref text, priority jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if jsonb_typeof(check_priority_option.priority) is distinct from 'number'
    or (check_priority_option.priority #>> '{}')::numeric
      <> trunc((check_priority_option.priority #>> '{}')::numeric)
    or abs((check_priority_option.priority #>> '{}')::numeric) > sluice.max_priority()
  then
    raise exception 'Cannot start flow "%": priority must be a whole number from % to %, got %',
      check_priority_option.flow_ref, -sluice.max_priority(), sluice.max_priority(),
      coalesce(left(check_priority_option.priority::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
