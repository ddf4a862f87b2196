-- sluice.function_outside_scope, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Whether a worker function serves a flow outside a scope (a worker of it registered for one).
-- Security definer: the workers of other flows are invisible to a scoped caller.
CREATE OR REPLACE FUNCTION sluice.function_outside_scope(function_name text, scope text[]) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select scope is not null and exists (
    select 1 from sluice.workers w
    where w.function_name = function_outside_scope.function_name
      and not sluice.scope_covers(scope, w.flow_slug)
  )
$$;
