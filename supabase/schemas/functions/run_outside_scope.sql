-- sluice.run_outside_scope, as the migrations create it (last defined in supabase/migrations/20261208003117_sluice_flow_access_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Whether a run exists and belongs to a flow outside the caller's scope (sluice.access_scope of
-- sluice.caller_role). Security definer: such a run is invisible to that caller. The
-- row-level policy of rows keyed by a run id alone (run_concurrency_keys) asks it, so that a scoped
-- role neither reads another team's rows nor writes one for another team's run, while a start may
-- still write its run's row before creating the run.
CREATE OR REPLACE FUNCTION sluice.run_outside_scope(run_id uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select exists (
    select 1 from sluice.runs r
    where r.run_id = run_outside_scope.run_id
      and not sluice.scope_covers(sluice.access_scope(sluice.caller_role()), r.flow_slug)
  )
$$;
