-- sluice.caller_role, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The role a check speaks for: the caller, also inside sluice's security definer functions (where
-- current_user is their owner), there the session's role (SET ROLE, else the login role).
CREATE OR REPLACE FUNCTION sluice.caller_role() RETURNS name
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case
    when current_user = (select n.nspowner::regrole::name from pg_catalog.pg_namespace n
      where n.nspname = 'sluice')
    then coalesce(nullif(pg_catalog.current_setting('role'), 'none')::name,
      session_user)
    else current_user
  end
$$;
