-- sluice.step_progress_event, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A step's task progress: done of total tasks, as of at.
CREATE OR REPLACE FUNCTION sluice.step_progress_event(ss sluice.step_states, at timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return jsonb_build_object('type', 'step:progress', 'runId', ss.run_id,
    'stepSlug', ss.step_slug, 'done', ss.initial_tasks - ss.remaining_tasks,
    'total', ss.initial_tasks, 'at', at);
end;
$$;
