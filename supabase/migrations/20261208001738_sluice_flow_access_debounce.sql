-- flow_access_debounce: sluice.start_debounced(text,text,jsonb,jsonb).
-- Written by `deno task sql:migration flow_access_debounce` from supabase/schemas/functions/ (start_debounced.sql); each routine whole, as its source reads.

-- A debounced start of the concrete flow `flow_slug`, started as `started_via`: checks the input,
-- then joins the pending start of (started_via, key), replacing its input and pushing its due time
-- to now + window_seconds (capped by the first start's max wait), or begins one; returns its run
-- id. One statement decides: concurrent starts of a key wait for each other's row lock.
CREATE OR REPLACE FUNCTION sluice.start_debounced(flow_slug text, started_via text, input jsonb, debounce jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_window interval := make_interval(secs => (start_debounced.debounce ->> 'window_seconds')::integer);
  v_max interval := make_interval(secs => (start_debounced.debounce ->> 'max_wait_seconds')::integer);
  -- The start's own time, not now(): the caller's transaction may have begun long before.
  v_now timestamptz := clock_timestamp();
  v_run uuid;
begin
  -- A role granted other flows neither starts this flow later nor touches its pending starts.
  perform sluice.check_flow_access(start_debounced.flow_slug,
    'start flow ' || quote_ident(start_debounced.flow_slug));
  perform sluice.check_run_input(start_debounced.flow_slug, start_debounced.input);
  insert into sluice.debounced_starts as d (
    flow_ref, debounce_key, flow_slug, run_id, input, traceparent, first_at, last_at, due_at,
    max_due_at
  )
  values (
    start_debounced.started_via, start_debounced.debounce ->> 'key', start_debounced.flow_slug,
    gen_random_uuid(), start_debounced.input, sluice.caller_traceparent(), v_now, v_now,
    v_now + v_window, v_now + v_max
  )
  on conflict (flow_ref, debounce_key) do update
  set
    -- A row whose run could not be created is replaced by a new pending start.
    run_id = case when d.error_message is null then d.run_id else excluded.run_id end,
    flow_slug = excluded.flow_slug,
    input = excluded.input,
    traceparent = excluded.traceparent,
    starts = case when d.error_message is null then d.starts + 1 else 1 end,
    first_at = case when d.error_message is null then d.first_at else excluded.first_at end,
    last_at = excluded.last_at,
    due_at = case when d.error_message is null
      then least(excluded.due_at, coalesce(d.max_due_at, 'infinity'))
      else excluded.due_at end,
    max_due_at = case when d.error_message is null then d.max_due_at else excluded.max_due_at end,
    error_message = null
  returning d.run_id into v_run;
  return v_run;
end;
$$;

-- Pending debounced starts are their flow's rows: a role granted other flows neither sees nor
-- replaces them, and its heartbeat's sweep starts only its own flows' due runs.
alter table sluice.debounced_starts enable row level security;
create policy flow_access on sluice.debounced_starts
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));
