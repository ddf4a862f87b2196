-- sluice.lock_run_ancestors, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Locks the ancestors of run_ids (sluice.run_ancestors), root first ((depth, run_id) order): the
-- lock order of a tree of subflows, whose runs are always locked from the root down, so a child's
-- end (which changes its parent) and its parent's cancel (which changes the child) never wait on
-- each other in a cycle. A no-op for runs with no parent.
CREATE OR REPLACE FUNCTION sluice.lock_run_ancestors(run_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if exists (
    select 1 from sluice.runs r
    where r.run_id = any (lock_run_ancestors.run_ids) and r.parent_run_id is not null
  ) then
    perform 1 from (
      select r.run_id from sluice.runs r
      where r.run_id = any (sluice.run_ancestors(lock_run_ancestors.run_ids))
      order by r.depth, r.run_id
      for update
    ) l;
  end if;
end;
$$;
