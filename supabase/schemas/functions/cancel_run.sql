-- sluice.cancel_run, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Cancels one run: it ends 'cancelled' with `reason` (and the role that cancelled it); its
-- unfinished steps are cancelled, so no dependent ever starts; its queued tasks are cancelled and
-- their messages archived (a task waiting out a retry delay is queued too); its started tasks are
-- cancelled, which fences their attempts (a late report is stale and changes nothing), and each
-- one's worker aborts the handler's AbortSignal at its next heartbeat. Events: step:cancelled per
-- step, then run:cancelled at commit.
--
-- Answers {run_id, outcome, status, ...}: outcome 'cancelled' (with tasks: how many tasks it
-- cancelled) when it cancelled the run now; 'unchanged' when the run had already ended (status
-- completed, failed or cancelled; a cancelled run's reason stays the first one), so calling it
-- again is harmless. Raises no_data_found when no run has the id.
-- Lock order: see sluice.cancel_run_set (runs -> step_states -> step_tasks -> messages).
CREATE OR REPLACE FUNCTION sluice.cancel_run(run_id uuid, reason text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_tasks integer;
  v_run sluice.runs;
begin
  perform sluice.check_run_access(cancel_run.run_id, format('cancel run %s', cancel_run.run_id));
  perform sluice.check_cancel_reason(cancel_run.reason,
    format('Cannot cancel run %s', cancel_run.run_id));
  select c.cancelled_tasks into v_tasks
  from sluice.cancel_run_set(array[cancel_run.run_id], cancel_run.reason) c;
  select * into v_run from sluice.runs r where r.run_id = cancel_run.run_id;
  if not found then
    raise exception 'Cannot cancel run %: no such run', cancel_run.run_id
      using errcode = 'no_data_found',
        hint = 'A run is deleted with its flow (delete_flow_and_data, flows reset) and by prune';
  end if;
  return jsonb_build_object(
    'run_id', v_run.run_id,
    'outcome', case when v_tasks is null then 'unchanged' else 'cancelled' end,
    'status', v_run.status,
    'tasks', coalesce(v_tasks, 0),
    'reason', v_run.cancel_reason,
    'cancelled_at', v_run.cancelled_at
  );
end;
$$;
