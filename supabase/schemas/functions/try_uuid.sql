-- sluice.try_uuid, as the migrations create it (last defined in supabase/migrations/20261130000600_sluice_start_tasks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The claim's classification reads run ids out of message bodies it does not trust: a body whose
-- run_id is not a uuid names no task, which is a class, not an error.
CREATE OR REPLACE FUNCTION sluice.try_uuid(value text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return value::uuid;
exception when invalid_text_representation then
  return null;
end;
$$;
