-- sluice.create_flow, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.create_flow(definition jsonb, shape jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text := definition ->> 'flow_slug';
  v_queue text;
  v_generation bigint;
  v_alias text;
begin
  -- Names are one namespace, compared case-insensitively like flow slugs.
  select a.alias into v_alias from sluice.aliases a
  where lower(a.alias) = lower(v_flow) and a.alias <> v_flow
  limit 1;
  if v_alias is not null then
    raise exception 'Cannot compile flow "%": it differs only in case from the alias "%"',
      v_flow, v_alias
      using errcode = 'duplicate_object',
        hint = 'Deploy the flow under a slug no alias uses';
  end if;

  insert into sluice.flows (flow_slug, queue_mode)
  values (v_flow, definition ->> 'queue_mode');

  for v_queue in
    select distinct s ->> 'queue_name' from jsonb_array_elements(shape -> 'steps') s
  loop
    if not exists (select 1 from sluice.queues q where q.queue_name = v_queue) then
      perform sluice.create_queue(v_flow, v_queue);
      insert into sluice.queues (queue_name, ownership, owner_flow_slug)
      values (
        v_queue,
        case when definition ->> 'queue_mode' = 'routed' then 'shared' else 'private' end,
        case when definition ->> 'queue_mode' = 'routed' then null else v_flow end
      );
    end if;
    -- Roles granted this flow alone get its queues' tables (unscoped ones hold them already).
    perform sluice.grant_queue_access(v_flow, v_queue);
  end loop;

  insert into sluice.steps (
    flow_slug, step_slug, step_index, step_type, map_source, deps_count,
    required_input_pattern, forbidden_input_pattern, when_unmet, when_exhausted, queue_name,
    wait_options
  )
  select v_flow, sh.value ->> 'step_slug', (sh.ord - 1)::integer, sh.value ->> 'step_type',
    sh.value ->> 'map_source', jsonb_array_length(sh.value -> 'deps'),
    nullif(sh.value -> 'required_input_pattern', 'null'::jsonb),
    nullif(sh.value -> 'forbidden_input_pattern', 'null'::jsonb),
    sh.value ->> 'when_unmet', sh.value ->> 'when_exhausted', sh.value ->> 'queue_name',
    nullif(sh.value -> 'wait', 'null'::jsonb)
  from jsonb_array_elements(shape -> 'steps') with ordinality as sh(value, ord);

  insert into sluice.deps (flow_slug, dep_slug, step_slug)
  select v_flow, d.dep, sh.value ->> 'step_slug'
  from jsonb_array_elements(shape -> 'steps') as sh(value)
  cross join lateral jsonb_array_elements_text(sh.value -> 'deps') as d(dep);

  -- validate_routes refused a name an alias of another flow holds, so the self-alias is new; its
  -- generation continues the name's history (a reset flow's earlier activations stay counted).
  insert into sluice.aliases as a (alias, flow_slug, generation)
  select v_flow, v_flow, coalesce(max(h.generation), 0) + 1
  from sluice.alias_history h
  where h.alias = v_flow
  returning a.generation into v_generation;
  insert into sluice.alias_history (alias, flow_slug, generation)
  values (v_flow, v_flow, v_generation);

  perform sluice.refresh_runtime_options(definition);
end;
$$;
