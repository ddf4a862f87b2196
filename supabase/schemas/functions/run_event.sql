-- sluice.run_event, as the migrations create it (last defined in supabase/migrations/20261207232105_sluice_subflow_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Events (docs/events.md): run:cancelled ends a run like run:completed and run:failed;
-- run:retried says a failed or cancelled run goes on. A subflow child's run:started names its
-- parent (run, step, index: docs/subflows.md#events); a root run's has no parent field.
CREATE OR REPLACE FUNCTION sluice.run_event(r sluice.runs, status text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'run:started', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'at', r.started_at)
      || case when r.parent_run_id is null then '{}'::jsonb
        else jsonb_build_object('parent', jsonb_build_object('runId', r.parent_run_id,
          'stepSlug', r.parent_step_slug, 'index', r.parent_task_index)) end
    when 'completed' then jsonb_build_object('type', 'run:completed', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'output', r.output, 'at', r.completed_at)
    when 'failed' then jsonb_build_object('type', 'run:failed', 'runId', r.run_id,
      'flowSlug', r.flow_slug,
      'stepSlug', (select ss.step_slug from sluice.step_states ss
        where ss.run_id = r.run_id and ss.status = 'failed' limit 1),
      'errorMessage', r.error_message, 'at', r.failed_at)
    when 'cancelled' then jsonb_build_object('type', 'run:cancelled', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'reason', r.cancel_reason, 'cancelledBy', r.cancelled_by,
      'at', r.cancelled_at)
    when 'retried' then jsonb_build_object('type', 'run:retried', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'retryCount', r.retry_count, 'retriedBy', r.retried_by,
      'at', r.retried_at)
  end;
end;
$$;
