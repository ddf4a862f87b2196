-- Stable aliases: compare-and-swap activation, an append-only history, concrete starts, and what
-- an old version still holds (sluice.version_drain). The alias-first start is sluice.start_flow
-- (20261130000500_sluice_start_flow.sql); compilation's self-alias and the recompile that keeps
-- aliases are in 20261130001100_sluice_ensure_flow_compiled.sql, the refusal to delete a flow an
-- alias points at in 20261130001200_sluice_maintenance.sql.
--
-- An alias names the concrete flow a caller's run starts on. Compilation gives every flow a
-- self-alias (alias = slug, generation 1); sluice.activate_alias re-points an alias, or creates
-- one, only when the caller's expected generation still matches, so two operators or two workers
-- racing to switch one alias cannot both win. Runs store the concrete slug they started on and the
-- name the caller used: a switch never moves a run, a task or a message.
--
-- Aliases and concrete slugs share one namespace: an alias may not take the name of a different
-- flow, except that a flow's own self-alias may be re-pointed (the V1 -> V2 upgrade keeps the
-- callers' name). An alias never points to a missing flow: deleting a flow that a foreign alias
-- points at is refused, and a development recompile keeps the aliases that point at the flow.
--
-- Generations never go back: a name's generation continues its history when a flow is compiled
-- again after a reset, or an alias is created on a name used before, so a generation read before
-- cannot win a compare-and-swap against a different alias (ABA) and the history stays keyed by
-- (alias, generation).
--
-- Lock order: sluice.activate_alias takes the flow locks (advisory, lowercased names in order: the
-- lock compilation and delete_flow_and_data take) of the alias's name and of the target, then the
-- alias row (update ... where generation = expected); compilation and deletion take one flow lock
-- first, so no cycle forms. No runtime table is locked, so activation cannot deadlock with claims,
-- completions or starts; a start reads the alias row without locking it and sees the generation
-- committed before its statement.

alter table sluice.alias_history
  add column previous_flow_slug text,
  add column activated_by text not null default current_user,
  add column forced boolean not null default false;

comment on table sluice.alias_history is
  'Every activation of every alias, append-only: sluice.activate_alias inserts, nothing updates or deletes.';

-- History is evidence: a row, once written, stays as it was.
create function sluice.refuse_alias_history_change()
returns trigger
language plpgsql
as $$
begin
  raise exception 'Cannot % sluice.alias_history: the alias history is append-only', lower(tg_op)
    using errcode = 'insufficient_privilege';
end;
$$;

create trigger alias_history_append_only
before update or delete on sluice.alias_history
for each row execute function sluice.refuse_alias_history_change();

-- Active runs of a flow are counted by version_drain and the dashboard; the history of finished
-- runs must not make that count slower.
create index runs_active_idx on sluice.runs (flow_slug) where status = 'started';

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
create function sluice.activate_alias(
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

-- Starts the concrete flow `flow_slug`, never through an alias: what a typed client does with a
-- concrete flow object, whose input type is that version's, and what a drain or a test uses to
-- reach an old version after its name was re-pointed.
create function sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid default null)
returns uuid
language plpgsql
as $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.create_run(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id);
end;
$$;

-- What a flow (typically an old version) still holds: active runs, queued and started tasks,
-- live workers, and the aliases other than its self-alias that point at it (new runs can still
-- arrive through them). `work_drained`: no active run and no queued or started task, so its
-- workers may stop; `drained`: that, no live worker and no alias, so it may be deleted.
create view sluice.version_drain as
with counts as (
  select f.flow_slug,
    coalesce((
      select array_agg(a.alias order by a.alias) from sluice.aliases a
      where a.flow_slug = f.flow_slug and a.alias <> f.flow_slug
    ), '{}') as aliases,
    (
      select a.flow_slug from sluice.aliases a where a.alias = f.flow_slug
    ) as self_alias_points_at,
    (
      select count(*)::integer from sluice.runs r
      where r.flow_slug = f.flow_slug and r.status = 'started'
    ) as active_runs,
    (
      select count(*)::integer from sluice.step_tasks t
      where t.flow_slug = f.flow_slug and t.status = 'queued'
    ) as queued_tasks,
    (
      select count(*)::integer from sluice.step_tasks t
      where t.flow_slug = f.flow_slug and t.status = 'started'
    ) as started_tasks,
    (
      select count(*)::integer from sluice.live_workers w where w.flow_slug = f.flow_slug
    ) as live_workers
  from sluice.flows f
)
select c.flow_slug, c.aliases, c.self_alias_points_at, c.active_runs, c.queued_tasks,
  c.started_tasks, c.live_workers,
  c.active_runs = 0 and c.queued_tasks = 0 and c.started_tasks = 0 as work_drained,
  c.active_runs = 0 and c.queued_tasks = 0 and c.started_tasks = 0 and c.live_workers = 0
    and cardinality(c.aliases) = 0 as drained
from counts c;

revoke all on all routines in schema sluice from public;
