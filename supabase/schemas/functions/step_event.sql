-- sluice.step_event, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001700, with step:waiting (its key or due time).
CREATE OR REPLACE FUNCTION sluice.step_event(ss sluice.step_states, status text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'step:started', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'tasks', ss.initial_tasks, 'at', ss.started_at)
    when 'waiting' then jsonb_build_object('type', 'step:waiting', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'key', ss.wait_key, 'until', ss.wait_until,
      'at', ss.waiting_at)
    when 'completed' then jsonb_build_object('type', 'step:completed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'output', ss.output, 'at', ss.completed_at)
    when 'failed' then jsonb_build_object('type', 'step:failed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'errorMessage', ss.error_message, 'at', ss.failed_at)
    when 'skipped' then jsonb_build_object('type', 'step:skipped', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'reason', ss.skip_reason, 'errorMessage', ss.error_message,
      'at', ss.skipped_at)
    when 'cancelled' then jsonb_build_object('type', 'step:cancelled', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'at', ss.cancelled_at)
  end;
end;
$$;
