-- Aliases, second pass: generations never go back, and one name is decided under one lock.
--
-- 1. A flow's self-alias continues its name's history. `flows reset` (or a development recompile)
--    deletes a flow with its self-alias, but the history is append-only; a recompile used to
--    create the self-alias again at generation 1, so the next activation collided with the
--    history's (alias, generation) key and failed, and an operator holding a generation read
--    before the reset could win a compare-and-swap against a different alias (ABA). The self-alias
--    now starts one past the highest generation its name ever had, and that start is recorded.
-- 2. sluice.activate_alias takes the flow lock of the alias's name and of the target (lowercased,
--    in name order: the lock compilation and delete_flow_and_data take), so the case-only check
--    cannot race a concurrent activation or compilation of a same-spelled name, and a deletion of
--    the target cannot cascade away an alias activated while it checked. A compiled flow may not
--    differ only in case from an existing alias either.
-- 3. Activating the flow an alias already points at, at its generation, is a no-op even while the
--    flow's workers are down: the live-worker check guards a switch, not a confirmation.
--
-- Lock order: flow locks (advisory, lowercased name order), then the alias row; compilation and
-- deletion take one flow lock first as before, so no cycle forms.

-- Writes a validated definition: flow, queues and their registry rows, steps, deps, self-alias.
-- The caller holds the flow lock and the queue-name locks (sluice.lock_queue_names).
create or replace function sluice.create_flow(definition jsonb, shape jsonb)
returns void
language plpgsql
as $$
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
    continue when exists (select 1 from sluice.queues q where q.queue_name = v_queue);
    perform pgmq.create(v_queue);
    insert into sluice.queues (queue_name, ownership, owner_flow_slug)
    values (
      v_queue,
      case when definition ->> 'queue_mode' = 'routed' then 'shared' else 'private' end,
      case when definition ->> 'queue_mode' = 'routed' then null else v_flow end
    );
  end loop;

  insert into sluice.steps (
    flow_slug, step_slug, step_index, step_type, map_source, deps_count,
    required_input_pattern, forbidden_input_pattern, when_unmet, when_exhausted, queue_name
  )
  select v_flow, sh.value ->> 'step_slug', (sh.ord - 1)::integer, sh.value ->> 'step_type',
    sh.value ->> 'map_source', jsonb_array_length(sh.value -> 'deps'),
    nullif(sh.value -> 'required_input_pattern', 'null'::jsonb),
    nullif(sh.value -> 'forbidden_input_pattern', 'null'::jsonb),
    sh.value ->> 'when_unmet', sh.value ->> 'when_exhausted', sh.value ->> 'queue_name'
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

-- Points `alias` at `flow_slug` when its generation is still `expected_generation` (0 creates a
-- new alias) and returns the new generation. Activating the flow the alias already points at,
-- with the current generation, changes nothing and returns that generation.
--
-- Refuses, before writing anything: an unknown target flow; an alias that is the name of a
-- different flow (other than that flow's own self-alias, which may be re-pointed) or differs only
-- in case from a flow or alias; unless `force`, a target with a route that no live,
-- non-deprecated worker serves (its tasks would wait). A lost race raises SQLSTATE SLA01 (detail:
-- the current generation and flow as JSON); missing workers raise SLA02 (detail: the unserved
-- routes as JSON).
create or replace function sluice.activate_alias(
  alias text,
  flow_slug text,
  expected_generation bigint,
  force boolean default false,
  activated_by text default null
)
returns bigint
language plpgsql
as $$
declare
  v_alias text := activate_alias.alias;
  v_target text := activate_alias.flow_slug;
  v_current sluice.aliases;
  v_generation bigint;
  v_missing text;
  v_missing_routes jsonb;
  v_name text;
begin
  if v_alias is null or not sluice.is_valid_slug(v_alias) then
    raise exception 'Cannot activate alias %: an alias is a slug (starts with a letter; letters, digits and single underscores; no trailing underscore)',
      coalesce(quote_literal(v_alias), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if expected_generation is null or expected_generation < 0 then
    raise exception 'Cannot activate alias "%": expected_generation must be 0 (a new alias) or the alias''s current generation, got %',
      v_alias, coalesce(expected_generation::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  -- The flow locks of both names, in order: the checks below then see every compilation,
  -- deletion and activation of these names that committed before, and none starts meanwhile.
  for v_name in
    select distinct lower(x) from unnest(array[v_alias, v_target]) x where x is not null order by 1
  loop
    perform pg_advisory_xact_lock(hashtextextended('sluice.flow:' || v_name, 0));
  end loop;

  if not exists (select 1 from sluice.flows f where f.flow_slug = v_target) then
    raise exception 'Cannot activate alias "%": no flow "%" (a flow exists once a worker for it has started and compiled it)',
      v_alias, coalesce(v_target, 'null')
      using errcode = 'no_data_found';
  end if;
  if exists (
    select 1 from sluice.flows f
    where lower(f.flow_slug) = lower(v_alias) and f.flow_slug <> v_alias
  ) or exists (
    select 1 from sluice.aliases a
    where lower(a.alias) = lower(v_alias) and a.alias <> v_alias
  ) then
    raise exception 'Cannot activate alias "%": it differs only in case from the flow or alias "%"',
      v_alias, (
        select n from (
          select f.flow_slug as n from sluice.flows f where lower(f.flow_slug) = lower(v_alias)
          union all
          select a.alias from sluice.aliases a where lower(a.alias) = lower(v_alias)
        ) names where n <> v_alias limit 1)
      using errcode = 'duplicate_object';
  end if;

  select * into v_current from sluice.aliases a where a.alias = v_alias;
  if v_current.flow_slug = v_target and v_current.generation = expected_generation then
    return v_current.generation;
  end if;

  if not coalesce(force, false) then
    select string_agg(format('%s (queue %s)', s.step_slug, s.queue_name), ', ' order by s.step_index),
      jsonb_agg(jsonb_build_object('step_slug', s.step_slug, 'queue_name', s.queue_name)
        order by s.step_index)
    into v_missing, v_missing_routes
    from sluice.steps s
    where s.flow_slug = v_target
      and not exists (
        select 1 from sluice.live_workers w
        where w.deprecated_at is null
          and w.queue_name = s.queue_name
          and w.flow_slug = s.flow_slug
          and (w.step_slug is null or w.step_slug = s.step_slug)
      );
    if v_missing is not null then
      raise exception 'Cannot activate alias "%" on flow "%": no live worker serves step %; start its workers first, or pass force',
        v_alias, v_target, v_missing
        using errcode = 'SLA02', detail = v_missing_routes::text;
    end if;
  end if;

  if expected_generation = 0 then
    insert into sluice.aliases as a (alias, flow_slug, generation)
    values (v_alias, v_target, 1)
    on conflict on constraint aliases_pkey do nothing
    returning a.generation into v_generation;
  else
    -- The compare-and-swap: a concurrent activation that committed first has moved the
    -- generation on, and this update then matches no row.
    update sluice.aliases a
    set flow_slug = v_target, generation = a.generation + 1, activated_at = now()
    where a.alias = v_alias and a.generation = expected_generation
    returning a.generation into v_generation;
  end if;

  if v_generation is null then
    select * into v_current from sluice.aliases a where a.alias = v_alias;
    raise exception 'Cannot activate alias "%": expected generation % but it is %',
      v_alias, expected_generation,
      case when v_current.alias is null then 'absent (generation 0)'
        else format('at generation %s (flow "%s")', v_current.generation, v_current.flow_slug) end
      using errcode = 'SLA01',
        detail = jsonb_build_object('generation', coalesce(v_current.generation, 0),
          'flow_slug', v_current.flow_slug)::text,
        hint = 'Another activation won; read the alias again and decide whether to activate';
  end if;

  insert into sluice.alias_history (
    alias, flow_slug, generation, previous_flow_slug, activated_by, forced
  )
  values (
    v_alias, v_target, v_generation,
    case when expected_generation > 0 then v_current.flow_slug end,
    coalesce(activate_alias.activated_by, current_user), coalesce(force, false)
  );
  return v_generation;
end;
$$;

revoke all on all routines in schema sluice from public;
