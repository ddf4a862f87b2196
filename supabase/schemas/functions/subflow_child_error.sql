-- sluice.subflow_child_error, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The error of a subflow step whose child failed or was cancelled: names the child run, its flow,
-- its index (a map subflow's element) and why it ended.
CREATE OR REPLACE FUNCTION sluice.subflow_child_error(child sluice.runs) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select format('child run %s (flow "%s"%s) of subflow step "%s" %s',
    child.run_id, child.flow_slug,
    case when s.wait_options #> '{subflow,map}' = 'true'::jsonb
      then format(', index %s', child.parent_task_index) else '' end,
    child.parent_step_slug,
    case child.status
      when 'cancelled' then 'was cancelled' || coalesce(': ' || child.cancel_reason, '')
      else 'failed: ' || coalesce(child.error_message, 'no error message')
    end)
  from sluice.runs p
  join sluice.steps s on s.flow_slug = p.flow_slug and s.step_slug = child.parent_step_slug
  where p.run_id = child.parent_run_id
$$;
