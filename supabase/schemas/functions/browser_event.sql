-- sluice.browser_event, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- An event as a browser may see it: its error text through sluice.browser_error_message.
CREATE OR REPLACE FUNCTION sluice.browser_event(event jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when jsonb_typeof(event -> 'errorMessage') = 'string'
    then jsonb_set(event, '{errorMessage}',
      to_jsonb(sluice.browser_error_message(event ->> 'errorMessage')))
    else event end
$$;
