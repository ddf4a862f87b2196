-- sluice.check_enum, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.check_enum(value jsonb, allowed text[], what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if value is not null and (jsonb_typeof(value) <> 'string' or not (value #>> '{}' = any (allowed)))
  then
    raise exception 'Invalid flow definition: % must be one of %, got %', what, allowed, value
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
