-- sluice.send_child_event, as the migrations create it (last defined in supabase/migrations/20261207232105_sluice_subflow_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Trigger of a child run's end (runs_child_end_event, on a status change of a run with a parent
-- to completed, failed or cancelled): its child:completed, child:failed or child:cancelled in the
-- parent run's stream, when the parent's flow sends events. Not deferred, unlike the run's own
-- terminal event: it goes out before what the end does to the parent (its subflow step's
-- step:completed or step:failed), in the transaction that ended the child. A child that ends
-- while sluice.start_subflow creates it is not linked yet; start_subflow sends its end itself.
CREATE OR REPLACE FUNCTION sluice.send_child_event() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if (select f.opt_events from sluice.runs p join sluice.flows f on f.flow_slug = p.flow_slug
      where p.run_id = new.parent_run_id) then
    perform sluice.send_run_event(new.parent_run_id, sluice.child_event(new, new.status));
  end if;
  return null;
end;
$$;
