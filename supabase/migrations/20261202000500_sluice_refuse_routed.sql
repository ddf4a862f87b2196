-- Closes the routed path (queue_mode 'routed', explicit shared queues) until it is built: issue 34's
-- measurement (docs/integration/back_office.md) found the need is fewer worker functions, met by
-- co-hosting private step workers in one function, not shared queues. The schema keeps 'routed'
-- (sluice.flows.queue_mode, validate_definition's enum, validate_routes' shared-queue branch), but
-- sluice.ensure_flow_compiled, the only compiler, refuses a routed definition before any lock or
-- write: nothing half-built is reachable. No TypeScript API produces one.
--
-- Redefined here (whole, create or replace): ensure_flow_compiled (one call added after
-- validate_definition).

-- Raises on a routed definition, naming the flow; the definition is already validated.
create function sluice.refuse_routed(definition jsonb)
returns void
language plpgsql
immutable
as $$
begin
  if definition ->> 'queue_mode' = 'routed' then
    raise exception 'Cannot compile flow "%": queue_mode "routed" (explicit shared queues) is not supported, shared queues are not built',
      definition ->> 'flow_slug'
      using errcode = 'feature_not_supported',
        hint = 'Compile it with queue_mode "flow" (a plain Flow) or "step" (withStepQueues()); to '
          || 'run several steps in one worker function, co-host them (withStepQueues(flow, '
          || '{ functions }), docs/integration/back_office.md)';
  end if;
end;
$$;

-- Every outcome but 'draining' and 'mismatch' answers the flow's compile_generation, which the
-- worker registers with. A development recompile goes through sluice.recreate_flow and so keeps
-- the flow's aliases. Security definer: it creates queues (sluice.create_queue; see
-- 20261130001500_sluice_privileges.sql).
create or replace function sluice.ensure_flow_compiled(definition jsonb, environment text)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_flow text;
  v_shape jsonb;
  v_stored jsonb;
  v_differences text[];
  v_live integer;
begin
  if environment is null or environment not in ('production', 'development') then
    raise exception 'Cannot compile flow: environment must be ''production'' or ''development'', got %',
      coalesce(quote_literal(environment), 'null')
      using errcode = 'invalid_parameter_value';
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
  perform sluice.recreate_flow(v_flow, definition, v_shape);
  v_flow := definition ->> 'flow_slug';
  return jsonb_build_object('outcome', 'recompiled', 'differences', to_jsonb(v_differences),
    'generation', sluice.compile_generation(v_flow));
end;
$$;

-- As every migration since 20261130001500: nothing here is executable or readable by PUBLIC.
revoke all on all routines in schema sluice from public;
