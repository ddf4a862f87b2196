-- flow_access_limits: sluice.run_outside_scope(uuid).
-- Written by `deno task sql:migration flow_access_limits` from supabase/schemas/functions/ (run_outside_scope.sql); each routine whole, as its source reads.

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

-- Concurrency and rate limits under per-flow access: a scoped role sees and writes only its flows'
-- rows. A run's concurrency key is written before its run exists (store_run_concurrency_key), so
-- its policy refuses only a run that exists outside the caller's scope.
alter table sluice.rate_limit_starts enable row level security;
create policy flow_access on sluice.rate_limit_starts
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.run_concurrency_keys enable row level security;
create policy flow_access on sluice.run_concurrency_keys
  using ((select sluice.access_scope(current_user)) is null
    or not sluice.run_outside_scope(run_id));

-- Read with the caller's rights, as the other monitoring views: a scoped role sees its own keys.
alter view sluice.concurrency_slots set (security_invoker = true);

-- As every sluice routine: nobody executes the new check but the roles granted sluice access.
revoke all on all routines in schema sluice from public;
