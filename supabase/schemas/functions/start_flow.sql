-- sluice.start_flow, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The producer's entry point by name: resolves flow_ref as an alias first (at start time), then
-- as a concrete slug. The run records the concrete slug and flow_ref.
CREATE OR REPLACE FUNCTION sluice.start_flow(flow_ref text, input jsonb, run_id uuid DEFAULT NULL::uuid) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text;
begin
  select a.flow_slug into v_flow from sluice.aliases a where a.alias = start_flow.flow_ref;
  if v_flow is null then
    select f.flow_slug into v_flow from sluice.flows f where f.flow_slug = start_flow.flow_ref;
  end if;
  if v_flow is null then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow.flow_ref, format('start flow %s', start_flow.flow_ref));
    raise exception 'Cannot start flow "%": no flow or alias has that name', start_flow.flow_ref
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.create_run(v_flow, start_flow.flow_ref, start_flow.input, start_flow.run_id);
end;
$$;

-- start_flow with start options (`{"idempotency_key": "..."}`): resolves flow_ref as an alias
-- first, then as a concrete slug, as start_flow(flow_ref, input, run_id) does.
CREATE OR REPLACE FUNCTION sluice.start_flow(flow_ref text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text;
begin
  select a.flow_slug into v_flow from sluice.aliases a where a.alias = start_flow.flow_ref;
  if v_flow is null then
    select f.flow_slug into v_flow from sluice.flows f where f.flow_slug = start_flow.flow_ref;
  end if;
  if v_flow is null then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow.flow_ref, format('start flow %s', start_flow.flow_ref));
    raise exception 'Cannot start flow "%": no flow or alias has that name', start_flow.flow_ref
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.start_with_options(v_flow, start_flow.flow_ref, start_flow.input,
    start_flow.run_id, start_flow.options);
end;
$$;
