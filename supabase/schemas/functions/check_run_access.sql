-- sluice.check_run_access, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Refuses a run of a flow outside the caller's scope (check_flow_access on its flow). Security
-- definer: the run is invisible to such a caller. A run that does not exist passes: the caller
-- reports that itself.
CREATE OR REPLACE FUNCTION sluice.check_run_access(run_id uuid, action text) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text;
begin
  select r.flow_slug into v_flow from sluice.runs r where r.run_id = check_run_access.run_id;
  if v_flow is not null then
    perform sluice.check_flow_access(v_flow, check_run_access.action);
  end if;
end;
$$;
