-- sluice.send_run_event, as the migrations create it (last defined in supabase/migrations/20261202000400_sluice_server_cost.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.send_run_event(run_id uuid, event jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_omitted jsonb;
  v_text text;
  v_field text;
begin
  -- An expression, not a query: PL/pgSQL evaluates it without a statement of its own (a query
  -- here was one nested statement per event, 2.7 per linear3 task).
  v_omitted := case
    when event ? 'output' and event ? 'errorMessage' then '["output", "errorMessage"]'::jsonb
    when event ? 'output' then '["output"]'::jsonb
    when event ? 'errorMessage' then '["errorMessage"]'::jsonb
  end;
  perform pg_notify(sluice.run_channel(run_id),
    (event - 'output' - 'errorMessage'
      || case when v_omitted is null then '{}' else jsonb_build_object('omitted', v_omitted) end
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
