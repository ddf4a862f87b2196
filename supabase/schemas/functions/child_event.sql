-- sluice.child_event, as the migrations create it (last defined in supabase/migrations/20261207232105_sluice_subflow_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- An event of a subflow child run in its PARENT run's stream (docs/subflows.md#events):
-- child:started, child:completed, child:failed or child:cancelled, naming the parent step, the
-- child's index (a map subflow's element, 0 otherwise), the child run and its concrete flow. A
-- failed child's error text is its errorMessage; the child's output and a cancel's reason stay in
-- the child's own stream (the parent's step:completed carries the outputs).
CREATE OR REPLACE FUNCTION sluice.child_event(c sluice.runs, status text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_build_object('type', 'child:' || status, 'runId', c.parent_run_id,
    'stepSlug', c.parent_step_slug, 'index', c.parent_task_index, 'childRunId', c.run_id,
    'flowSlug', c.flow_slug,
    'at', case status when 'started' then c.started_at when 'completed' then c.completed_at
      when 'failed' then c.failed_at else c.cancelled_at end)
    || case when status = 'failed' then jsonb_build_object('errorMessage', c.error_message)
      else '{}'::jsonb end
$$;
