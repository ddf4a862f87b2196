-- sluice.finish_run_if_done, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Completes the run once no step is pending. Run output = outputs of the completed leaf steps
-- (steps nothing depends on), keyed by step slug.
--
-- PL/pgSQL, not SQL: a SQL function's body is parsed and planned again on every call, which made
-- this, run after every completion, the most expensive statement of the hot path. PL/pgSQL keeps
-- the plan for the session. A child run's completion goes on to its parent's subflow step
-- (sluice.end_subflow_child), in this same transaction.
CREATE OR REPLACE FUNCTION sluice.finish_run_if_done(run_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_parent uuid;
begin
  update sluice.runs r
  set status = 'completed', completed_at = now(),
    output = (
      select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
      from sluice.step_states ss
      where ss.run_id = r.run_id
        and ss.status = 'completed'
        and not exists (
          select 1 from sluice.deps d
          where d.flow_slug = r.flow_slug and d.dep_slug = ss.step_slug
        )
    )
  where r.run_id = finish_run_if_done.run_id
    and r.status = 'started'
    and r.remaining_steps = 0
  returning r.parent_run_id into v_parent;
  if v_parent is not null then
    perform sluice.end_subflow_child(finish_run_if_done.run_id);
  end if;
end;
$$;
