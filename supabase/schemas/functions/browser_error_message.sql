-- sluice.browser_error_message, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- An error text as a browser may see it: stack frames ("    at f (file:///...:1:2)") dropped,
-- file URLs and absolute source paths replaced by "<file>". What the error says stays.
CREATE OR REPLACE FUNCTION sluice.browser_error_message(message text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select regexp_replace(
    regexp_replace(message, '\n[ \t]*at [^\n]*', '', 'g'),
    'file://[^\s)]*|(/[^\s/()]+)+\.[cm]?[jt]sx?(:[0-9]+)*', '<file>', 'g')
$$;
