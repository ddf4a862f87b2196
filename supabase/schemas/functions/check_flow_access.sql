-- sluice.check_flow_access, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Refuses a flow (slug or alias name) outside the caller's scope, naming both (SLA01, detail
-- {role, flow, action, flows}).
CREATE OR REPLACE FUNCTION sluice.check_flow_access(flow_ref text, action text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_role name := sluice.caller_role();
  v_scope text[] := sluice.access_scope(v_role);
begin
  if v_scope is null or sluice.scope_covers(v_scope, check_flow_access.flow_ref) then
    return;
  end if;
  raise exception 'Cannot %: role "%" has no access to flow "%" (its sluice grant covers %)',
    check_flow_access.action, v_role, check_flow_access.flow_ref,
    coalesce((select pg_catalog.string_agg(pg_catalog.format('"%s"', e), ', ')
      from pg_catalog.unnest(v_scope) e), 'no flow')
    using errcode = 'SLA01',
      detail = pg_catalog.json_build_object('role', v_role, 'flow', check_flow_access.flow_ref,
        'action', check_flow_access.action)::text,
      hint = 'The owner of sluice''s objects widens a grant: select sluice.grant_access(role, flows)';
end;
$$;
