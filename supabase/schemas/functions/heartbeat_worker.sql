-- sluice.heartbeat_worker, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql, 20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Returns whether the worker has been deprecated (it should then stop polling and drain).
CREATE OR REPLACE FUNCTION sluice.heartbeat_worker(worker_id uuid) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_deprecated timestamptz;
begin
  update sluice.workers w set last_heartbeat_at = now()
  where w.worker_id = heartbeat_worker.worker_id
  returning w.deprecated_at into v_deprecated;
  if not found then
    raise exception 'Cannot heartbeat worker %: no such worker', heartbeat_worker.worker_id;
  end if;
  return jsonb_build_object('deprecated', v_deprecated is not null);
end;
$$;

-- The heartbeat of a worker that says which attempts it is running: refreshes the heartbeat as
-- sluice.heartbeat_worker(uuid) does and answers, besides `deprecated`, `aborted`: the running
-- attempts (tasks: [{run_id, step_slug, task_index, attempt}]) that are no longer live, so their
-- handlers should stop: the run was cancelled (or failed), or the task was requeued, retried,
-- finished or deleted since the attempt was claimed. Each entry carries the task's and the run's
-- status (null when gone) and the run's cancel reason, for the abort's message. A worker learns
-- of a cancellation this way, at the latest one heartbeat interval after it commits.
-- Takes no lock beyond the worker row's.
CREATE OR REPLACE FUNCTION sluice.heartbeat_worker(worker_id uuid, tasks jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_result jsonb;
begin
  if jsonb_typeof(heartbeat_worker.tasks) is distinct from 'array' then
    raise exception 'Cannot heartbeat worker %: tasks must be a JSON array of {run_id, step_slug, task_index, attempt}, got %',
      heartbeat_worker.worker_id, coalesce(jsonb_typeof(heartbeat_worker.tasks), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  v_result := sluice.heartbeat_worker(heartbeat_worker.worker_id);
  return v_result || jsonb_build_object('aborted', coalesce((
    select jsonb_agg(jsonb_build_object(
      'run_id', x.run_id, 'step_slug', x.step_slug, 'task_index', x.task_index,
      'attempt', x.attempt, 'task_status', t.status, 'run_status', r.status,
      'cancel_reason', r.cancel_reason
    ) order by x.ord)
    from rows from (jsonb_to_recordset(heartbeat_worker.tasks)
      as (run_id uuid, step_slug text, task_index integer, attempt integer))
      with ordinality as x(run_id, step_slug, task_index, attempt, ord)
    left join sluice.step_tasks t
      on t.run_id = x.run_id and t.step_slug = x.step_slug and t.task_index = x.task_index
    left join sluice.runs r on r.run_id = x.run_id
    where not (t.status is not distinct from 'started'
      and t.attempts_count is not distinct from x.attempt
      and t.last_worker_id is not distinct from heartbeat_worker.worker_id)
  ), '[]'::jsonb));
end;
$$;
