-- sluice.check_timeout, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Raises when value (already a whole number or null) is a timeout longer than 2147483 seconds
-- (about 24.8 days): a worker arms a timer of timeout * 1000 ms, and a longer timer fires at once.
-- The DSL refuses the same bound (MAX_TIMEOUT_SECONDS in src/dsl/_validate.ts).
CREATE OR REPLACE FUNCTION sluice.check_timeout(value jsonb, what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if value is not null and value <> 'null'::jsonb and value::text::numeric > 2147483 then
    raise exception 'Invalid flow definition: % must be at most 2147483 seconds (about 24.8 days, the longest worker timer), got %', what, value
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
