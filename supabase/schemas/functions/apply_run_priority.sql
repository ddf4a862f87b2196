-- sluice.apply_run_priority, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Gives the run just created by this transaction its priority, and its tasks already queued (the
-- root steps': create_run queued them before the run had one). Priority 0 writes nothing.
CREATE OR REPLACE FUNCTION sluice.apply_run_priority(run_id uuid, priority integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if coalesce(apply_run_priority.priority, 0) = 0 then
    return;
  end if;
  update sluice.runs r set priority = apply_run_priority.priority
  where r.run_id = apply_run_priority.run_id;
  update sluice.step_tasks t set priority = apply_run_priority.priority
  where t.run_id = apply_run_priority.run_id and t.status = 'queued';
end;
$$;
