-- sluice.create_run, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Creates a run of the concrete flow `flow_slug` that the caller named as `started_via`:
-- validates the input before writing anything, then creates the run, its step states, and the
-- tasks and messages of every step that is ready at once. The one writer of new runs. It holds
-- the flow's start lock shared until its transaction ends: a drain check (readVersionDrain) takes
-- it exclusively before counting, so a run from a producer transaction opened before an alias
-- switch is counted once it commits instead of being missed. No other lock waits on it.
-- As in migration 20261130000500, except that the run records the W3C trace context of its
-- caller (sluice.caller_traceparent) for the worker's attempt spans to join its trace.
CREATE OR REPLACE FUNCTION sluice.create_run(flow_slug text, started_via text, input jsonb, run_id uuid) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text := create_run.flow_slug;
  v_run_id uuid := coalesce(create_run.run_id, gen_random_uuid());
  v_root_map text;
  v_max_bytes integer;
  v_bytes bigint;
begin
  -- Every start path ends here, the security definer start_run and subflows included.
  perform sluice.check_flow_access(v_flow, 'start flow ' || quote_ident(v_flow));
  perform pg_advisory_xact_lock_shared(hashtextextended('sluice.starts:' || lower(v_flow), 0));
  if create_run.input is null then
    raise exception 'Cannot start flow "%": input is null; pass a JSON value', v_flow
      using errcode = 'null_value_not_allowed';
  end if;
  -- Every start path (start_flow, start_flow_version, start_run) ends here: the size limit is
  -- enforced once, before anything is written.
  select f.opt_max_input_bytes into v_max_bytes from sluice.flows f where f.flow_slug = v_flow;
  v_bytes := octet_length(create_run.input::text);
  if v_bytes > v_max_bytes then
    raise exception 'Cannot start flow "%": the input is % bytes as JSON, more than the limit of % bytes (max_input_bytes)',
      v_flow, v_bytes, v_max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_input_bytes',
        'size', v_bytes, 'max', v_max_bytes)::text;
  end if;

  select s.step_slug into v_root_map
  from sluice.steps s
  where s.flow_slug = v_flow and s.step_type = 'map' and s.deps_count = 0
  order by s.step_index
  limit 1;
  if v_root_map is not null and jsonb_typeof(create_run.input) <> 'array' then
    raise exception 'Cannot start flow "%": root map step "%" maps over the run input, which must be an array, got %',
      v_flow, v_root_map, jsonb_typeof(create_run.input)
      using errcode = 'invalid_parameter_value';
  end if;

  if exists (select 1 from sluice.runs r where r.run_id = v_run_id) then
    raise exception 'Cannot start flow "%": run % already exists', v_flow, v_run_id
      using errcode = 'unique_violation';
  end if;

  insert into sluice.runs (run_id, flow_slug, started_via, input, remaining_steps, traceparent)
  select v_run_id, v_flow, create_run.started_via, create_run.input, count(*),
    sluice.caller_traceparent()
  from sluice.steps s
  where s.flow_slug = v_flow;

  insert into sluice.step_states (run_id, step_slug, flow_slug, remaining_deps)
  select v_run_id, s.step_slug, s.flow_slug, s.deps_count
  from sluice.steps s
  where s.flow_slug = v_flow;

  perform sluice.start_ready_steps(v_run_id);
  return v_run_id;
end;
$$;
