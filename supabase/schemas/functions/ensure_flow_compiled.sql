-- sluice.ensure_flow_compiled, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Every outcome but 'draining' and 'mismatch' answers the flow's compile_generation, which the
-- worker registers with. A development recompile goes through sluice.recreate_flow and so keeps
-- the flow's aliases; it deletes the flow's runs, so it refuses ('in_flight') while any run of the
-- flow is still started, a run waiting on a signal or a sleep included, and answers how many
-- finished runs it deleted per status ('deleted_runs'). Security definer: it creates queues (sluice.create_queue; see
-- 20261130001500_sluice_privileges.sql).
CREATE OR REPLACE FUNCTION sluice.ensure_flow_compiled(definition jsonb, environment text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text;
  v_shape jsonb;
  v_stored jsonb;
  v_differences text[];
  v_live integer;
  v_in_flight bigint;
  v_waiting_steps bigint;
  v_waiting jsonb;
  v_deleted jsonb;
begin
  if environment is null or environment not in ('production', 'development') then
    raise exception 'Cannot compile flow: environment must be ''production'' or ''development'', got %',
      coalesce(quote_literal(environment), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  -- Security definer: the check speaks for the session's role (sluice.caller_role). Before the
  -- validation, which would otherwise tell another team's flow what is wrong with it.
  if definition ->> 'flow_slug' is not null then
    perform sluice.check_flow_access(definition ->> 'flow_slug',
      format('compile flow %s', definition ->> 'flow_slug'));
  end if;
  perform sluice.validate_definition(definition);
  v_flow := definition ->> 'flow_slug';
  perform sluice.refuse_routed(definition);
  v_shape := sluice.definition_shape(definition);

  -- Concurrent startups of one flow serialize here, so exactly one of them creates it.
  perform pg_advisory_xact_lock(hashtextextended('sluice.flow:' || lower(v_flow), 0));

  select f.flow_slug into v_flow from sluice.flows f where lower(f.flow_slug) = lower(v_flow);
  if v_flow is null then
    v_flow := definition ->> 'flow_slug';
    perform sluice.lock_queue_names(v_shape);
    perform sluice.validate_routes(definition, v_shape);
    perform sluice.create_flow(definition, v_shape);
    return jsonb_build_object('outcome', 'compiled', 'differences', '[]'::jsonb,
      'generation', sluice.compile_generation(v_flow));
  end if;

  if v_flow <> definition ->> 'flow_slug' then
    v_differences := array[format('flow slug: compiled "%s", definition "%s" (slugs are compared case-insensitively)',
      v_flow, definition ->> 'flow_slug')];
  else
    v_stored := sluice.stored_shape(v_flow);
    v_differences := sluice.shape_differences(v_stored, v_shape);
  end if;

  if cardinality(v_differences) = 0 then
    perform sluice.refresh_runtime_options(definition);
    return jsonb_build_object('outcome', 'verified', 'differences', '[]'::jsonb,
      'generation', sluice.compile_generation(v_flow));
  end if;

  if environment = 'production' then
    return jsonb_build_object('outcome', 'mismatch', 'differences', to_jsonb(v_differences));
  end if;

  -- Development: a recompile deletes every run of the flow. A run in flight is never dropped
  -- silently: refuse before anything changes (its old workers keep serving it), counting the runs
  -- and naming the ones waiting (up to 20) and the live workers that may still finish them, so the
  -- caller waits for them or the developer lets them finish, cancels them or
  -- deletes them explicitly (`sluice flows reset <flow> --force`).
  select count(*) into v_in_flight
  from sluice.runs r where r.flow_slug = v_flow and r.status = 'started';
  if v_in_flight > 0 then
    select count(*) into v_waiting_steps
    from sluice.step_states s
    where s.flow_slug = v_flow and s.status = 'waiting';
    select coalesce(jsonb_agg(jsonb_build_object('run_id', w.run_id, 'step_slug', w.step_slug,
        'wait_key', w.wait_key, 'wait_until', w.wait_until)
        order by w.waiting_at, w.run_id, w.step_slug), '[]'::jsonb)
    into v_waiting
    from (
      select s.run_id, s.step_slug, s.wait_key, s.wait_until, s.waiting_at
      from sluice.step_states s
      where s.flow_slug = v_flow and s.status = 'waiting'
      order by s.waiting_at, s.run_id, s.step_slug
      limit 20
    ) w;
    select count(*) into v_live from sluice.live_workers lw where lw.flow_slug = v_flow;
    return jsonb_build_object('outcome', 'in_flight', 'in_flight_runs', v_in_flight,
      'live_workers', v_live,
      'waiting_steps', v_waiting_steps, 'waiting', v_waiting,
      'differences', to_jsonb(v_differences));
  end if;

  -- Development: old workers must stop before their flow disappears under them.
  with deprecated as (
    update sluice.workers w set deprecated_at = coalesce(w.deprecated_at, now())
    where w.worker_id in (
      select lw.worker_id from sluice.live_workers lw where lw.flow_slug = v_flow
    )
    returning 1
  )
  select count(*) into v_live from deprecated;
  if v_live > 0 then
    return jsonb_build_object('outcome', 'draining', 'live_workers', v_live,
      'differences', to_jsonb(v_differences));
  end if;

  -- The recreated flow takes a new compile_generation: every worker registered for the old one,
  -- live or paused past the heartbeat TTL, is fenced from here on (sluice.worker_fenced).
  select coalesce(jsonb_object_agg(c.status, c.n), '{}'::jsonb) into v_deleted
  from (
    select r.status, count(*) as n from sluice.runs r where r.flow_slug = v_flow group by r.status
  ) c;
  perform sluice.recreate_flow(v_flow, definition, v_shape);
  v_flow := definition ->> 'flow_slug';
  return jsonb_build_object('outcome', 'recompiled', 'differences', to_jsonb(v_differences),
    'deleted_runs', v_deleted, 'generation', sluice.compile_generation(v_flow));
end;
$$;
