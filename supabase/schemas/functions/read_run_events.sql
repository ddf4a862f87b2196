-- sluice.read_run_events, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.read_run_events(run_id uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- Security definer: the check speaks for the session's role (sluice.caller_role).
  perform sluice.check_run_access(read_run_events.run_id,
    format('read run %s', read_run_events.run_id));
  return (select jsonb_agg(sluice.browser_event(e.event) order by e.n)
    from jsonb_array_elements(sluice.run_events(read_run_events.run_id))
      with ordinality as e(event, n));
end;
$$;
