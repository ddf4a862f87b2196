-- sluice.send_run_status_event, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001700, except that a run going back to 'started' sends nothing here:
-- sluice.retry_run sends run:retried itself, before the step events of the retry (this trigger
-- is deferred to commit, which would put it after them).
CREATE OR REPLACE FUNCTION sluice.send_run_status_event() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if tg_op = 'UPDATE' and new.status = 'started' then
    return null;
  end if;
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.run_event(new, new.status));
  end if;
  return null;
end;
$$;
