-- sluice.end_subflow_child, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A child run completed (called by sluice.finish_run_if_done, in the child's final transaction,
-- which holds the parent's lock: its runs were locked root first). When its parent step still
-- waits, one child fewer remains; the last one completes the step with the child's output (a map
-- subflow: its children's outputs in element order) and starts the parent's next steps. A parent
-- step that no longer waits (failed, cancelled: the child was retried on its own) is left as it is.
CREATE OR REPLACE FUNCTION sluice.end_subflow_child(child_run_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_child sluice.runs;
  v_state sluice.step_states;
  v_map boolean;
begin
  select * into v_child from sluice.runs r where r.run_id = end_subflow_child.child_run_id;
  -- Held already when the caller locked root first; taken here for any other caller.
  perform 1 from sluice.runs r where r.run_id = v_child.parent_run_id for update;
  select * into v_state from sluice.step_states ss
  where ss.run_id = v_child.parent_run_id and ss.step_slug = v_child.parent_step_slug
    and ss.status = 'waiting';
  if not found then
    return;
  end if;
  if v_state.remaining_tasks > 1 then
    update sluice.step_states ss set remaining_tasks = ss.remaining_tasks - 1
    where ss.run_id = v_state.run_id and ss.step_slug = v_state.step_slug;
    return;
  end if;
  select s.wait_options #> '{subflow,map}' = 'true'::jsonb into v_map
  from sluice.steps s where s.flow_slug = v_state.flow_slug and s.step_slug = v_state.step_slug;
  perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
    sluice.subflow_output(v_state.run_id, v_state.step_slug, v_map));
  perform sluice.start_ready_steps(v_state.run_id);
end;
$$;
