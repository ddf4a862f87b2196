-- notify_minimal: sluice.send_run_event(uuid,jsonb).
-- Written by `deno task sql:migration notify_minimal` from supabase/schemas/functions/ (send_run_event.sql); each routine whole, as its source reads.

CREATE OR REPLACE FUNCTION sluice.send_run_event(run_id uuid, event jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_omitted jsonb;
  v_text text;
  v_field text;
begin
  -- Any role may LISTEN, so NOTIFY carries ids, states, times and counts only: what a run
  -- computed (output, error text) and what a person typed or is (a wait's key, a cancel's reason,
  -- who cancelled or retried) are left out and named, and watchers read them back from the state.
  -- An expression, not a query: PL/pgSQL evaluates it without a statement of its own (a query
  -- here was one nested statement per event, 2.7 per linear3 task).
  v_omitted := to_jsonb(array_remove(array[
    case when event ? 'output' then 'output' end,
    case when event ? 'errorMessage' then 'errorMessage' end,
    case when event ? 'key' then 'key' end,
    case when event ->> 'type' = 'run:cancelled' then 'reason' end,
    case when event ? 'cancelledBy' then 'cancelledBy' end,
    case when event ? 'retriedBy' then 'retriedBy' end
  ], null));
  perform pg_notify(sluice.run_channel(run_id),
    (event - array['output', 'errorMessage', 'key', 'cancelledBy', 'retriedBy']
      - case when event ->> 'type' = 'run:cancelled' then 'reason' else '' end
      || case when v_omitted = '[]' then '{}' else jsonb_build_object('omitted', v_omitted) end
    )::text);
  -- Supabase Realtime's broadcast from the database, where it is installed: private topic, so
  -- only subscribers that the project's Realtime authorization policies admit receive it.
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is not null then
    event := sluice.browser_event(event);
    v_text := event::text;
    if octet_length(v_text) > sluice.max_event_bytes() then
      foreach v_field in array array['output', 'errorMessage'] loop
        if event ? v_field then
          event := (event - v_field)
            || jsonb_build_object('omitted', coalesce(event -> 'omitted', '[]') || to_jsonb(v_field));
          v_text := event::text;
        end if;
        exit when octet_length(v_text) <= sluice.max_event_bytes();
      end loop;
    end if;
    perform realtime.send(event, event ->> 'type', sluice.run_topic(run_id), true);
  end if;
end;
$$;
