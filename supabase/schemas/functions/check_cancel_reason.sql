-- sluice.check_cancel_reason, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.check_cancel_reason(reason text, what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if reason is not null and char_length(reason) > sluice.max_cancel_reason_length() then
    raise exception '%: the reason is % characters, more than the limit of %',
      what, char_length(reason), sluice.max_cancel_reason_length()
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;
