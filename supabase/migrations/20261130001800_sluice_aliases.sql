-- Stable aliases: compare-and-swap activation, an append-only history, alias-first and concrete
-- starts, and what an old version still holds (sluice.version_drain).
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

-- Creates a run of the concrete flow `flow_slug` that the caller named as `started_via`:
-- validates the input before writing anything, then creates the run, its step states, and the
-- tasks and messages of every step that is ready at once. The one writer of new runs. It holds
-- the flow's start lock shared until its transaction ends: a drain check (readVersionDrain) takes
-- it exclusively before counting, so a run from a producer transaction opened before an alias
-- switch is counted once it commits instead of being missed. No other lock waits on it.
create function sluice.create_run(flow_slug text, started_via text, input jsonb, run_id uuid)
returns uuid
language plpgsql
as $$
declare
  v_flow text := create_run.flow_slug;
  v_run_id uuid := coalesce(create_run.run_id, gen_random_uuid());
  v_root_map text;
  v_max_bytes integer;
  v_bytes bigint;
begin
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

  insert into sluice.runs (run_id, flow_slug, started_via, input, remaining_steps)
  select v_run_id, v_flow, create_run.started_via, create_run.input, count(*)
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

-- The producer's entry point by name: resolves flow_ref as an alias first (at start time), then
-- as a concrete slug. The run records the concrete slug and flow_ref.
create or replace function sluice.start_flow(flow_ref text, input jsonb, run_id uuid default null)
returns uuid
language plpgsql
as $$
declare
  v_flow text;
begin
  select a.flow_slug into v_flow from sluice.aliases a where a.alias = start_flow.flow_ref;
  if v_flow is null then
    select f.flow_slug into v_flow from sluice.flows f where f.flow_slug = start_flow.flow_ref;
  end if;
  if v_flow is null then
    raise exception 'Cannot start flow "%": no flow or alias has that name', start_flow.flow_ref
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.create_run(v_flow, start_flow.flow_ref, start_flow.input, start_flow.run_id);
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

-- Refuses to delete a flow that a foreign alias points at: the alias would silently fall back to
-- whatever else has its name. Unless `force` (a development recompile, `flows reset --force`), also
-- refuses a flow with active runs (they would vanish without a word) or with live workers (they
-- would loop on a dropped queue), naming the count and the workers. Otherwise as before (migration
-- 20261130001200).
drop function sluice.delete_flow_and_data(text);
create function sluice.delete_flow_and_data(flow_slug text, force boolean default false)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_queues text[];
  v_ids bigint[];
  v_queue text;
  v_aliases text;
  v_active bigint;
  v_workers text;
begin
  if not exists (select 1 from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug)
  then
    raise exception 'Cannot delete flow "%": no such flow', delete_flow_and_data.flow_slug
      using errcode = 'no_data_found';
  end if;
  perform pg_advisory_xact_lock(
    hashtextextended('sluice.flow:' || lower(delete_flow_and_data.flow_slug), 0));

  select string_agg(format('"%s"', a.alias), ', ' order by a.alias) into v_aliases
  from sluice.aliases a
  where a.flow_slug = delete_flow_and_data.flow_slug and a.alias <> a.flow_slug;
  if v_aliases is not null then
    raise exception 'Cannot delete flow "%": alias % points at it; activate the alias on another flow first',
      delete_flow_and_data.flow_slug, v_aliases
      using errcode = 'dependent_objects_still_exist';
  end if;

  if not coalesce(delete_flow_and_data.force, false) then
    select count(*) into v_active
    from sluice.runs r
    where r.flow_slug = delete_flow_and_data.flow_slug and r.status = 'started';
    if v_active > 0 then
      raise exception 'Cannot delete flow "%": % active run(s); let them finish or cancel them, or pass force',
        delete_flow_and_data.flow_slug, v_active
        using errcode = 'object_in_use';
    end if;
    select string_agg(format('%s (%s)', w.worker_id, w.function_name), ', ' order by w.worker_id::text)
    into v_workers
    from sluice.live_workers w
    where w.flow_slug = delete_flow_and_data.flow_slug and w.deprecated_at is null;
    if v_workers is not null then
      raise exception 'Cannot delete flow "%": live workers serve it: %; stop them first, or pass force',
        delete_flow_and_data.flow_slug, v_workers
        using errcode = 'object_in_use';
    end if;
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  join sluice.queues q on q.queue_name = t.queue_name and q.ownership = 'shared'
  where t.flow_slug = delete_flow_and_data.flow_slug and t.message_id is not null;
  -- Runs (with their step states and tasks) before messages: the global lock order.
  delete from sluice.runs r where r.flow_slug = delete_flow_and_data.flow_slug;
  for v_queue in select distinct q from unnest(v_queues) as q loop
    perform pgmq.delete(v_queue,
      array(select m.id from unnest(v_queues, v_ids) as m(q, id) where m.q = v_queue));
  end loop;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  select array_agg(q.queue_name) into v_queues
  from sluice.queues q
  where q.ownership = 'private' and q.owner_flow_slug = delete_flow_and_data.flow_slug;

  delete from sluice.aliases a where a.flow_slug = delete_flow_and_data.flow_slug;
  delete from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug;

  -- A queue an operator already dropped by hand is skipped: PGMQ 1.5.1's drop_queue raises for it.
  for v_queue in
    select q from unnest(v_queues) as q
    where exists (select 1 from pgmq.meta m where m.queue_name = q)
  loop
    perform sluice.drop_queue(delete_flow_and_data.flow_slug, v_queue);
  end loop;
end;
$$;

-- Writes a validated definition: flow, queues and their registry rows, steps, deps, self-alias.
-- As in migration 20261130001100, except that the self-alias continues its name's generations and
-- a flow may not differ only in case from an alias.
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
    perform sluice.create_queue(v_flow, v_queue);
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

-- A development recompile replaces the flow `old_slug` (the stored spelling of the definition's
-- slug). The aliases that point at it from other names are set aside and put back on the new
-- flow, generation and all, so its callers keep their name; the caller holds the flow lock.
create function sluice.recreate_flow(old_slug text, definition jsonb, shape jsonb)
returns void
language plpgsql
as $$
declare
  v_kept sluice.aliases[];
begin
  with kept as (
    delete from sluice.aliases a
    where a.flow_slug = recreate_flow.old_slug and a.alias <> recreate_flow.old_slug
    returning a.*
  )
  select array_agg(k) into v_kept from kept k;
  perform sluice.delete_flow_and_data(old_slug, force => true);
  perform sluice.lock_queue_names(shape);
  perform sluice.validate_routes(definition, shape);
  perform sluice.create_flow(definition, shape);
  insert into sluice.aliases (alias, flow_slug, generation, activated_at)
  select k.alias, definition ->> 'flow_slug', k.generation, k.activated_at
  from unnest(v_kept) k;
end;
$$;

-- The flow's current compile_generation (see sluice.flows), which ensure_flow_compiled answers.
create function sluice.compile_generation(flow_slug text)
returns bigint
language sql
stable
as $$
  select f.compile_generation from sluice.flows f where f.flow_slug = compile_generation.flow_slug
$$;

-- As in migration 20261130001100, except that a development recompile goes through
-- sluice.recreate_flow and so keeps the flow's aliases, and every outcome but 'draining' and
-- 'mismatch' answers the flow's compile_generation, which the worker registers with.
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

revoke all on all routines in schema sluice from public;
