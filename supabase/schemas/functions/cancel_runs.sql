-- sluice.cancel_runs, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Cancels many started runs in one set-based statement: those of `flow_slug` (a concrete slug),
-- optionally only those started through `started_via` (an alias or the slug) or before
-- `started_before`, at most batch_size of them (oldest first; default 500, at most 10,000), as
-- sluice.cancel_run cancels one. Answers {cancelled, run_ids, more}: `more` says that runs
-- matching the filter may remain (the batch was full), so a caller repeats until it is false.
-- Lock order: see sluice.cancel_run_set; the batch's runs are locked in run_id order.
CREATE OR REPLACE FUNCTION sluice.cancel_runs(flow_slug text, reason text DEFAULT NULL::text, started_via text DEFAULT NULL::text, started_before timestamp with time zone DEFAULT NULL::timestamp with time zone, batch_size integer DEFAULT 500) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids uuid[];
begin
  if cancel_runs.flow_slug is null then
    raise exception 'Cannot cancel runs: flow_slug is required (the concrete flow whose runs to cancel)'
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_flow_access(cancel_runs.flow_slug,
    format('cancel runs of flow %s', cancel_runs.flow_slug));
  if not exists (select 1 from sluice.flows f where f.flow_slug = cancel_runs.flow_slug) then
    raise exception 'Cannot cancel runs of flow "%": no such flow', cancel_runs.flow_slug
      using errcode = 'no_data_found';
  end if;
  if cancel_runs.batch_size is null or cancel_runs.batch_size < 1
    or cancel_runs.batch_size > 10000
  then
    raise exception 'Cannot cancel runs of flow "%": batch_size must be from 1 to 10000, got %',
      cancel_runs.flow_slug, coalesce(cancel_runs.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_cancel_reason(cancel_runs.reason,
    format('Cannot cancel runs of flow "%s"', cancel_runs.flow_slug));

  -- runs_active_idx (flow_slug where status = 'started') answers the candidates.
  select array_agg(c.cancelled_run_id order by c.cancelled_run_id) into v_ids
  from sluice.cancel_run_set(
    array(
      select r.run_id from sluice.runs r
      where r.flow_slug = cancel_runs.flow_slug and r.status = 'started'
        and (cancel_runs.started_via is null or r.started_via = cancel_runs.started_via)
        and (cancel_runs.started_before is null or r.started_at < cancel_runs.started_before)
      order by r.started_at, r.run_id
      limit cancel_runs.batch_size
    ),
    cancel_runs.reason
  ) c;
  return jsonb_build_object(
    'cancelled', coalesce(cardinality(v_ids), 0),
    'run_ids', coalesce(to_jsonb(v_ids), '[]'::jsonb),
    'more', coalesce(cardinality(v_ids), 0) = cancel_runs.batch_size
  );
end;
$$;
