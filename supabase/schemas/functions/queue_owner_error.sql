-- sluice.queue_owner_error, as the migrations create it (last defined in supabase/migrations/20261130001500_sluice_privileges.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Queue DDL for the definer compilation and deletion. The real extension adds every queue table
-- to itself (ALTER EXTENSION pgmq ADD TABLE), which only the extension's owner may do; when the
-- role that owns sluice's functions (current_user inside the definer) is not that owner, the raw
-- `must be owner of extension pgmq` (or `permission denied for schema pgmq`) becomes an error
-- naming both roles and what to do. Any other failure, and every failure where no extension pgmq
-- exists (the compat layer), is raised unchanged. `action` is "compile" or "delete".
CREATE OR REPLACE FUNCTION sluice.queue_owner_error(action text, flow_slug text, queue text, cause text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_owner text;
begin
  select e.extowner::regrole::text into v_owner from pg_catalog.pg_extension e
  where e.extname = 'pgmq';
  if v_owner is null or v_owner = current_user::text then
    return;
  end if;
  raise exception 'Cannot % flow "%": queue "%" cannot be %: extension pgmq is owned by role "%", but sluice''s functions are owned by role "%", and only the extension''s owner may create or drop queues',
    action, flow_slug, queue, case when action = 'compile' then 'created' else 'dropped' end,
    v_owner, current_user
    using errcode = 'insufficient_privilege', detail = cause,
      hint = format('Run the sluice migrations as role "%s", the owner of extension pgmq', v_owner);
end;
$$;
