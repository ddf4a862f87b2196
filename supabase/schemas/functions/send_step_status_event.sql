-- sluice.send_step_status_event, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001700, except that a step going back to 'created' (a retry of a step
-- that never started) sends nothing: its step:started follows when it starts.
CREATE OR REPLACE FUNCTION sluice.send_step_status_event() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if new.status = 'created' then
    return null;
  end if;
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.step_event(new, new.status));
  end if;
  return null;
end;
$$;
