-- sluice.activate_alias, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001800, except that wait steps need no worker: they hold no task.
CREATE OR REPLACE FUNCTION sluice.activate_alias(alias text, flow_slug text, expected_generation bigint, force boolean DEFAULT false, activated_by text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

  perform sluice.check_flow_access(v_alias, format('activate alias %s', v_alias));
  perform sluice.check_flow_access(v_target,
    format('activate alias %s -> %s', v_alias, coalesce(v_target, 'null')));
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
      and s.step_type not in ('sleep', 'signal', 'subflow')
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
    -- A name used before (by a flow since deleted) continues its generations: the history is
    -- append-only, and a generation read before the deletion must not match again.
    insert into sluice.aliases as a (alias, flow_slug, generation)
    values (v_alias, v_target, coalesce(
      (select max(h.generation) from sluice.alias_history h where h.alias = v_alias), 0) + 1)
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
