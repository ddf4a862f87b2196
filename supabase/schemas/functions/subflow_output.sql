-- sluice.subflow_output, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The output of a subflow step whose children all completed: the child run's output, or for a
-- map subflow the array of its children's outputs in element order.
CREATE OR REPLACE FUNCTION sluice.subflow_output(run_id uuid, step_slug text, map boolean) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when subflow_output.map
    then coalesce(jsonb_agg(r.output order by r.parent_task_index), '[]'::jsonb)
    else (array_agg(r.output))[1]
  end
  from sluice.runs r
  where r.parent_run_id = subflow_output.run_id and r.parent_step_slug = subflow_output.step_slug
$$;
