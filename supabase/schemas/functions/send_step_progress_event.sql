-- sluice.send_step_progress_event, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Trigger (before update, so the throttle's clock is written with the row and costs no second
-- update): step:progress when a started step's remaining tasks drop and its last progress event
-- (or its start) is at least the flow's progress interval ago.
CREATE OR REPLACE FUNCTION sluice.send_step_progress_event() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_events boolean;
  v_interval integer;
  -- Transaction time, like every other event's timestamp.
  v_now timestamptz := now();
begin
  select f.opt_events, f.opt_progress_interval into v_events, v_interval
  from sluice.flows f where f.flow_slug = new.flow_slug;
  if v_events
    and coalesce(old.progress_sent_at, old.started_at) + make_interval(secs => v_interval) <= v_now
  then
    new.progress_sent_at := v_now;
    perform sluice.send_run_event(new.run_id, sluice.step_progress_event(new, v_now));
  end if;
  return new;
end;
$$;
