-- sluice.check_whole_number, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Raises unless value is null or a whole number >= minimum.
CREATE OR REPLACE FUNCTION sluice.check_whole_number(value jsonb, minimum integer, what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
