-- sluice.access_scope, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The scope of a role: null when unscoped (also a superuser, a BYPASSRLS role and the owner of
-- sluice's objects), else its entries plus the concrete flows the aliases it covers have pointed
-- at. A role with no grant of its own takes those of the granted roles it inherits from (unscoped
-- if any is, or none exists); a role that does not exist gets nothing.
-- Security definer: it reads access_grants and the alias history, which its callers may not.
CREATE OR REPLACE FUNCTION sluice.access_scope(role_name name) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_oid oid;
  v_found boolean := false;
  v_unscoped boolean := false;
  v_entries text[] := '{}';
  v_row sluice.access_grants;
begin
  select r.oid into v_oid from pg_catalog.pg_roles r where r.rolname = access_scope.role_name;
  if v_oid is null then
    return '{}';
  end if;
  -- A superuser, a role that bypasses row-level security and the owner of sluice's objects reach
  -- everything (pg_has_role below would count a superuser a member of every role).
  if exists (select 1 from pg_catalog.pg_roles r where r.oid = v_oid
      and (r.rolsuper or r.rolbypassrls))
    or v_oid = (select n.nspowner from pg_catalog.pg_namespace n where n.nspname = 'sluice')
  then
    return null;
  end if;
  select * into v_row from sluice.access_grants g where g.role_oid = v_oid;
  if found then
    v_found := true;
    v_unscoped := v_row.flows is null;
    v_entries := coalesce(v_row.flows, '{}');
  else
    for v_row in
      select g.* from sluice.access_grants g
      where g.role_oid <> v_oid and pg_catalog.pg_has_role(v_oid, g.role_oid, 'USAGE')
    loop
      v_found := true;
      v_unscoped := v_unscoped or v_row.flows is null;
      v_entries := v_entries || coalesce(v_row.flows, '{}');
    end loop;
  end if;
  if not v_found or v_unscoped then
    return null;
  end if;
  return v_entries || coalesce((
    select pg_catalog.array_agg(distinct h.flow_slug)
    from sluice.alias_history h
    where sluice.scope_covers(v_entries, h.alias)
  ), '{}');
end;
$$;
