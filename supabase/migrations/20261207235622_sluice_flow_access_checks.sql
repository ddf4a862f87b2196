-- flow_access_checks: sluice.activate_alias(text,text,bigint,boolean,text), sluice.begin_wait(uuid,text,text,text,integer,jsonb), sluice.cancel_run(uuid,text), sluice.cancel_runs(text,text,text,timestamp with time zone,integer), sluice.create_flow(jsonb,jsonb), sluice.create_run(text,text,jsonb,uuid), sluice.create_schedule(text,text,text,jsonb,text,text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone), sluice.delete_flow_and_data(text,boolean), sluice.ensure_flow_compiled(jsonb,text), sluice.grant_access(name), sluice.grant_access(name,text[]), sluice.read_run_events(uuid), sluice.retry_run(uuid,boolean), sluice.start_flow(text,jsonb,uuid), sluice.start_flow(text,jsonb,uuid,jsonb), sluice.start_flow_version(text,jsonb,uuid), sluice.start_flow_version(text,jsonb,uuid,jsonb).
-- Written by `deno task sql:migration flow_access_checks` from supabase/schemas/functions/ (activate_alias.sql, begin_wait.sql, cancel_run.sql, cancel_runs.sql, create_flow.sql, create_run.sql, create_schedule.sql, delete_flow_and_data.sql, ensure_flow_compiled.sql, grant_access.sql, read_run_events.sql, retry_run.sql, start_flow.sql, start_flow_version.sql); each routine whole, as its source reads.

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

-- Starts a ready wait step (called by sluice.start_ready_steps, which holds the run's lock):
-- a wait whose dependency was skipped is skipped (it has nothing to wait on; its dependents see
-- it absent), a sleep whose due time has passed completes at once with it, a signal wait whose
-- key has a buffered signal completes at once with the earliest one's payload and consumes it,
-- and any other wait moves to 'waiting' (step:waiting) with its key and due time. A buffered
-- signal counts when it is not consumed, not expired, no larger than the flow's output limit, and
-- was sent after the run started (or the step accepts signals sent before its run). A subflow
-- step starts its child runs (sluice.start_subflow). The caller's loop starts what a completion
-- here releases.
CREATE OR REPLACE FUNCTION sluice.begin_wait(run_id uuid, flow_slug text, step_slug text, step_type text, deps_count integer, wait_options jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_state sluice.step_states;
  v_until timestamptz;
  v_signal sluice.signals;
  v_run_started timestamptz;
  v_max_bytes integer;
begin
  select * into v_state from sluice.step_states ss
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  if exists (
    select 1 from sluice.deps d
    join sluice.step_states ds on ds.run_id = begin_wait.run_id and ds.step_slug = d.dep_slug
    where d.flow_slug = begin_wait.flow_slug and d.step_slug = begin_wait.step_slug
      and ds.status = 'skipped'
  ) then
    perform sluice.skip_steps(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      'dependency_skipped', false);
    return;
  end if;

  if begin_wait.step_type = 'subflow' then
    perform sluice.start_subflow(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      begin_wait.wait_options);
    return;
  end if;

  if begin_wait.step_type = 'sleep' then
    if v_state.wait_seconds is null and v_state.wait_until is null then
      raise exception 'Cannot start sleep step "%" of run %: it has no due time (its dependency completed without one)',
        begin_wait.step_slug, begin_wait.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    v_until := coalesce(now() + make_interval(secs => v_state.wait_seconds), v_state.wait_until);
    update sluice.step_states ss
    set status = 'waiting', waiting_at = now(), wait_until = v_until
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    if v_until <= now() then
      perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug,
        begin_wait.step_slug, to_jsonb(sluice.iso_instant(v_until)));
    end if;
    return;
  end if;

  if v_state.wait_key is null then
    raise exception 'Cannot start signal wait step "%" of run %: it has no signal key (its dependency completed without one)',
      begin_wait.step_slug, begin_wait.run_id
      using errcode = 'invalid_parameter_value';
  end if;
  -- Normally held already (sluice.complete_tasks takes it before the run lock); a no-op then. It
  -- also makes this the only consumer of the key's buffered signals until the transaction ends.
  perform sluice.lock_signal_keys(array[v_state.wait_key]);
  update sluice.step_states ss
  set status = 'waiting', waiting_at = now(),
    wait_until = now() + make_interval(secs => (begin_wait.wait_options ->> 'timeout_seconds')::integer)
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  select r.started_at into v_run_started from sluice.runs r where r.run_id = begin_wait.run_id;
  select f.opt_max_output_bytes into v_max_bytes from sluice.flows f
  where f.flow_slug = begin_wait.flow_slug;
  select * into v_signal from sluice.signals s
  where s.signal_key = v_state.wait_key
    and s.consumed_at is null
    and s.expires_at > now()
    and (s.sent_at >= v_run_started
      or begin_wait.wait_options -> 'accept_signals_sent_before_run' = 'true'::jsonb)
    and octet_length(s.payload::text) <= v_max_bytes
    -- Only a sender with access to this flow approves its waits (per-flow grants).
    and sluice.sender_covers(s.sent_by, begin_wait.flow_slug)
  order by s.sent_at, s.signal_id
  limit 1;
  if found then
    update sluice.signals s set consumed_at = now() where s.signal_id = v_signal.signal_id;
    update sluice.step_states ss set wait_signal_id = v_signal.signal_id
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      v_signal.payload);
  end if;
end;
$$;

-- Cancels one run: it ends 'cancelled' with `reason` (and the role that cancelled it); its
-- unfinished steps are cancelled, so no dependent ever starts; its queued tasks are cancelled and
-- their messages archived (a task waiting out a retry delay is queued too); its started tasks are
-- cancelled, which fences their attempts (a late report is stale and changes nothing), and each
-- one's worker aborts the handler's AbortSignal at its next heartbeat. Events: step:cancelled per
-- step, then run:cancelled at commit.
--
-- Answers {run_id, outcome, status, ...}: outcome 'cancelled' (with tasks: how many tasks it
-- cancelled) when it cancelled the run now; 'unchanged' when the run had already ended (status
-- completed, failed or cancelled; a cancelled run's reason stays the first one), so calling it
-- again is harmless. Raises no_data_found when no run has the id.
-- Lock order: see sluice.cancel_run_set (runs -> step_states -> step_tasks -> messages).
CREATE OR REPLACE FUNCTION sluice.cancel_run(run_id uuid, reason text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_tasks integer;
  v_run sluice.runs;
begin
  perform sluice.check_run_access(cancel_run.run_id, format('cancel run %s', cancel_run.run_id));
  perform sluice.check_cancel_reason(cancel_run.reason,
    format('Cannot cancel run %s', cancel_run.run_id));
  select c.cancelled_tasks into v_tasks
  from sluice.cancel_run_set(array[cancel_run.run_id], cancel_run.reason) c;
  select * into v_run from sluice.runs r where r.run_id = cancel_run.run_id;
  if not found then
    raise exception 'Cannot cancel run %: no such run', cancel_run.run_id
      using errcode = 'no_data_found',
        hint = 'A run is deleted with its flow (delete_flow_and_data, flows reset) and by prune';
  end if;
  return jsonb_build_object(
    'run_id', v_run.run_id,
    'outcome', case when v_tasks is null then 'unchanged' else 'cancelled' end,
    'status', v_run.status,
    'tasks', coalesce(v_tasks, 0),
    'reason', v_run.cancel_reason,
    'cancelled_at', v_run.cancelled_at
  );
end;
$$;

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

-- As in 20261202000200, and the cron expression (sluice.cron_problem, at most
-- sluice.max_cron_length() characters), the time zone (pg_timezone_names) and the input (the run
-- input limit: the flow's max_input_bytes, or the default for an alias, which may move) are
-- checked before anything is written.
CREATE OR REPLACE FUNCTION sluice.create_schedule(schedule_name text, target_kind text, target text, input jsonb, cron text, timezone text, missed text, next_due_at timestamp with time zone, following_due_at timestamp with time zone, created_at timestamp with time zone DEFAULT clock_timestamp()) RETURNS sluice.schedules
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row sluice.schedules;
  v_problem text;
  v_bytes bigint;
  v_max_bytes integer;
begin
  if create_schedule.schedule_name is null or not sluice.is_valid_slug(create_schedule.schedule_name) then
    raise exception 'Cannot create schedule "%": a schedule name starts with a letter and holds letters, digits and single underscores',
      left(create_schedule.schedule_name, 200) using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.target_kind is distinct from 'flow' and create_schedule.target_kind is distinct from 'alias' then
    raise exception 'Cannot create schedule "%": target kind must be flow or alias, got %',
      create_schedule.schedule_name, coalesce(left(create_schedule.target_kind, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.missed is distinct from 'run-once' and create_schedule.missed is distinct from 'skip' then
    raise exception 'Cannot create schedule "%": missed must be run-once or skip, got %',
      create_schedule.schedule_name, coalesce(left(create_schedule.missed, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.input is null then
    raise exception 'Cannot create schedule "%": input is null; pass a JSON value',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  if create_schedule.next_due_at is null or create_schedule.cron is null
    or create_schedule.timezone is null then
    raise exception 'Cannot create schedule "%": cron, timezone and the next due time are required',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  v_problem := sluice.cron_problem(create_schedule.cron);
  if v_problem is not null then
    raise exception 'Cannot create schedule "%": invalid cron expression %: %',
      create_schedule.schedule_name, left(create_schedule.cron, 100), v_problem
      using errcode = 'invalid_parameter_value',
        hint = '5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, as croner reads them';
  end if;
  if not exists (
    select 1 from pg_catalog.pg_timezone_names z where z.name = create_schedule.timezone
  ) then
    raise exception 'Cannot create schedule "%": unknown time zone "%"',
      create_schedule.schedule_name, left(create_schedule.timezone, 100)
      using errcode = 'invalid_parameter_value',
        hint = 'An IANA time zone name such as UTC, Europe/Berlin or America/New_York (pg_timezone_names lists them)';
  end if;
  perform sluice.check_flow_access(create_schedule.target,
    format('create schedule %s', create_schedule.schedule_name));
  if create_schedule.target_kind = 'flow' and not exists (
    select 1 from sluice.flows f where f.flow_slug = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no flow "%"', create_schedule.schedule_name,
      left(create_schedule.target, 200) using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  if create_schedule.target_kind = 'alias' and not exists (
    select 1 from sluice.aliases a where a.alias = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no alias "%"', create_schedule.schedule_name,
      left(create_schedule.target, 200) using errcode = 'no_data_found',
        hint = 'Every compiled flow has an alias of its own name; activate_alias creates others';
  end if;
  v_max_bytes := coalesce((
    select f.opt_max_input_bytes from sluice.flows f
    where create_schedule.target_kind = 'flow' and f.flow_slug = create_schedule.target
  ), sluice.default_max_json_bytes());
  v_bytes := octet_length(create_schedule.input::text);
  if v_bytes > v_max_bytes then
    raise exception 'Cannot create schedule "%": the input is % bytes as JSON, more than the limit of % bytes (max_input_bytes)',
      create_schedule.schedule_name, v_bytes, v_max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_input_bytes',
        'size', v_bytes, 'max', v_max_bytes)::text;
  end if;
  insert into sluice.schedules (schedule_name, target_kind, target, input, cron, timezone, missed,
    next_due_at, following_due_at, advanced_at, created_at)
  values (create_schedule.schedule_name, create_schedule.target_kind, create_schedule.target,
    create_schedule.input, create_schedule.cron, create_schedule.timezone, create_schedule.missed,
    create_schedule.next_due_at, create_schedule.following_due_at, create_schedule.created_at,
    create_schedule.created_at)
  on conflict on constraint schedules_pkey do nothing
  returning * into v_row;
  if v_row.schedule_name is null then
    raise exception 'Cannot create schedule "%": a schedule of that name exists',
      create_schedule.schedule_name using errcode = 'unique_violation',
        hint = 'Delete it first, or choose another name';
  end if;
  return v_row;
end;
$$;

-- Removes a flow with all its runs, tasks and messages, its private queues and their registry
-- rows and its aliases. Shared queues stay; only this flow's messages are removed from them.
-- Refuses to delete a flow that a foreign alias points at: the alias would silently fall back to
-- whatever else has its name. Unless `force` (a development recompile, `flows reset --force`), also
-- refuses a flow with active runs (they would vanish without a word) or with live workers (they
-- would loop on a dropped queue), naming the count and the workers. Security definer: it drops
-- queues (sluice.drop_queue; see 20261130001500_sluice_privileges.sql).
CREATE OR REPLACE FUNCTION sluice.delete_flow_and_data(flow_slug text, force boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queues text[];
  v_ids bigint[];
  v_queue text;
  v_aliases text;
  v_active bigint;
  v_workers text;
begin
  -- Security definer: the check speaks for the session's role (sluice.caller_role).
  perform sluice.check_flow_access(delete_flow_and_data.flow_slug,
    format('delete flow %s', delete_flow_and_data.flow_slug));
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

-- Grants a producer's and a worker's privileges to one role, on every flow: on what exists now,
-- and (through default privileges of the role running this) on what later migrations and queue
-- creation add. Run by the role that owns sluice's objects (the one that runs the migrations).
-- Idempotent; a scoped grant of the role (grant_access(role, flows)) becomes unscoped.
-- Also takes TRIGGER and REFERENCES on every sluice queue table from every role but its owner
-- (sluice.restrict_queue_tables), whoever granted them.
CREATE OR REPLACE FUNCTION sluice.grant_access(grantee name) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform sluice.grant_access(grant_access.grantee, null::text[]);
end;
$$;

-- Grants a producer's and a worker's privileges to one role, limited to a set of flows
-- (docs/privileges.md#per-flow-access): each entry a flow slug (also covering the flows the alias
-- of that name has pointed at) or a slug prefix ending in `*`; null means every flow. The scope is
-- recorded in sluice.access_grants, which row-level security and the entry points read. A scoped
-- role gets no privilege on pgmq's tables beyond reading pgmq.meta, except on the queue tables of
-- its flows (now, and as later compilations create them: sluice.grant_queue_access). Bad input is
-- refused before anything is granted, naming it. Idempotent: a second call replaces the scope.
CREATE OR REPLACE FUNCTION sluice.grant_access(grantee name, flows text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  role_name text := quote_ident(grantee);
  v_bad text;
  v_oid oid;
begin
  select r.oid into v_oid from pg_roles r where r.rolname = grantee;
  if v_oid is null then
    raise exception 'Cannot grant sluice access to role %: no such role', quote_literal(grantee)
      using errcode = 'undefined_object';
  end if;
  if flows is not null then
    if cardinality(flows) = 0 then
      raise exception 'Cannot grant sluice access to role %: the list of flows is empty (null grants every flow)',
        quote_literal(grantee)
        using errcode = 'invalid_parameter_value';
    end if;
    select coalesce(e, 'null') into v_bad from unnest(flows) e
    where not coalesce(sluice.is_valid_slug(e)
      or (e ~ '^[A-Za-z][A-Za-z0-9_]*\*$' and char_length(e) <= 129), false)
    limit 1;
    if found then
      raise exception 'Cannot grant sluice access to role %: % is neither a flow slug nor a slug prefix ending in *',
        quote_literal(grantee), v_bad
        using errcode = 'invalid_parameter_value';
    end if;
  end if;

  insert into sluice.access_grants as g (role_oid, flows) values (v_oid, grant_access.flows)
  on conflict (role_oid) do update set flows = excluded.flows, granted_at = now();

  execute format('grant usage on schema sluice, pgmq to %s', role_name);
  execute format('grant execute on all routines in schema sluice to %s', role_name);
  execute format(
    'grant select, insert, update, delete on all tables in schema sluice to %s', role_name);
  execute format('grant usage, select, update on all sequences in schema sluice to %s',
    role_name);
  execute format('alter default privileges in schema sluice grant execute on functions to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice grant select, insert, update, delete on tables to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice grant usage, select, update on sequences to %s',
    role_name);
  if flows is null then
    execute format('grant select, insert, update, delete on all tables in schema pgmq to %s',
      role_name);
    execute format(
      'alter default privileges in schema pgmq grant select, insert, update, delete on tables to %s',
      role_name);
    execute format('grant usage, select, update on all sequences in schema pgmq to %s', role_name);
    execute format(
      'alter default privileges in schema pgmq grant usage, select, update on sequences to %s',
      role_name);
  else
    -- Only its flows' queue tables: none by default, each granted as it is created.
    -- Nor another queue's sequence, whose setval would break that queue's sends.
    execute format('revoke all on all tables in schema pgmq from %s', role_name);
    execute format('revoke all on all sequences in schema pgmq from %s', role_name);
    execute format(
      'alter default privileges in schema pgmq revoke all on tables from %s', role_name);
    execute format(
      'alter default privileges in schema pgmq revoke all on sequences from %s', role_name);
    execute format('grant select on pgmq.meta to %s', role_name);
    perform sluice.grant_queue_access(q.flow_slug, q.queue_name)
    from (
      select q.owner_flow_slug as flow_slug, q.queue_name from sluice.queues q
      where q.owner_flow_slug is not null
      union
      select s.flow_slug, s.queue_name from sluice.steps s where s.queue_name is not null
    ) q;
  end if;
  -- The queue registries are written only by the definer compilation and deletion: a row forged
  -- by a grantee would make delete_flow_and_data drop a queue that is not its flow's. The grants
  -- themselves only by the owner.
  execute format('revoke insert, update, delete, truncate on sluice.queues, pgmq.meta from %s',
    role_name);
  execute format('revoke all on sluice.access_grants from %s', role_name);
  perform sluice.restrict_queue_tables(q.queue_name) from sluice.queues q;
  -- Granting stays with the owner.
  execute format('revoke execute on function sluice.grant_access(name) from %s', role_name);
  execute format('revoke execute on function sluice.grant_access(name, text[]) from %s',
    role_name);
end;
$_$;

CREATE OR REPLACE FUNCTION sluice.read_run_events(run_id uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- Security definer: the check speaks for the session's role (sluice.caller_role).
  perform sluice.check_run_access(read_run_events.run_id,
    format('read run %s', read_run_events.run_id));
  return (select jsonb_agg(sluice.browser_event(e.event) order by e.n)
    from jsonb_array_elements(sluice.run_events(read_run_events.run_id))
      with ordinality as e(event, n));
end;
$$;

-- Retries a failed or cancelled run from where it stopped. The run goes back to 'started'
-- (retry_count + 1, retried_at, retried_by = current_user); every step that failed or was
-- cancelled goes on: one that had started keeps its completed tasks (with their outputs) and
-- requeues its failed and cancelled ones on their stored queues with fresh messages, one that
-- had not started waits for its dependencies again (remaining_deps still counts exactly the
-- dependencies that had not resolved). Completed and skipped steps stay as they are and never
-- run again. Requeued tasks keep their attempt counts (the fencing tokens continue, so no late
-- report of an earlier attempt can match) and get max_attempts more (attempts_base). Events:
-- run:retried, then step:started per step that started again.
--
-- Only the concrete flow the run started on takes part (never an alias's current target).
-- Unless `force`, refuses (SQLSTATE SLR01, naming the steps and queues in the message and as a
-- JSON array of {step_slug, queue_name} in the detail) when a step it would
-- start again has no live worker of that flow: the work would wait in the queue until one
-- starts; with force it is queued anyway.
-- Answers {run_id, outcome, status, retry_count, tasks, steps}: outcome 'retried' (status is
-- 'started', or 'failed' again when a step fails at once, e.g. an unmet condition that fails the
-- run) or 'unchanged' for a run that is started or completed. Raises no_data_found when no run
-- has the id (a run is deleted with its flow).
-- Lock order: the run row (a subflow child's after its ancestors, root first:
-- sluice.lock_run_ancestors) -> its step states (slug order) -> the tasks it requeues -> messages
-- (new ones sent, the old ones' archived copies deleted): the global ladder. A subflow step that
-- failed or was cancelled waits again for the children it had, retrying those that failed
-- (sluice.start_subflow).
CREATE OR REPLACE FUNCTION sluice.retry_run(run_id uuid, force boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run sluice.runs;
  v_reset text[];
  v_missing text;
  v_missing_routes jsonb;
  v_step record;
  v_ids bigint[];
  v_tasks integer := 0;
begin
  perform sluice.check_run_access(retry_run.run_id, format('retry run %s', retry_run.run_id));
  perform sluice.lock_run_ancestors(array[retry_run.run_id]);
  select * into v_run from sluice.runs r where r.run_id = retry_run.run_id for update;
  if not found then
    raise exception 'Cannot retry run %: no such run', retry_run.run_id
      using errcode = 'no_data_found',
        hint = 'A run is deleted with its flow (delete_flow_and_data, flows reset) and by prune';
  end if;
  if v_run.status not in ('failed', 'cancelled') then
    return jsonb_build_object('run_id', v_run.run_id, 'outcome', 'unchanged',
      'status', v_run.status, 'retry_count', v_run.retry_count, 'tasks', 0, 'steps', 0);
  end if;

  select array_agg(l.step_slug order by l.step_slug) into v_reset
  from (
    select ss.step_slug from sluice.step_states ss
    where ss.run_id = retry_run.run_id and ss.status in ('failed', 'cancelled')
    order by ss.step_slug
    for update
  ) l;

  if not coalesce(retry_run.force, false) then
    select string_agg(format('%s (queue %s)', rc.step_slug, rc.queue_name), ', '
        order by rc.step_index),
      jsonb_agg(jsonb_build_object('step_slug', rc.step_slug, 'queue_name', rc.queue_name)
        order by rc.step_index)
    into v_missing, v_missing_routes
    from sluice.route_coverage rc
    where rc.flow_slug = v_run.flow_slug and rc.step_slug = any (v_reset) and rc.missing_worker;
    if v_missing is not null then
      raise exception 'Cannot retry run % of flow "%": no live worker of that flow serves step %',
        retry_run.run_id, v_run.flow_slug, v_missing
        using errcode = 'SLR01',
          detail = v_missing_routes::text,
          hint = 'Start the flow''s workers, or retry with force to queue the work for them';
    end if;
  end if;

  update sluice.runs r
  set status = 'started', failed_at = null, cancelled_at = null, error_message = null,
    cancel_reason = null, cancelled_by = null,
    retry_count = r.retry_count + 1, retried_at = now(), retried_by = current_user
  where r.run_id = retry_run.run_id
  returning * into v_run;
  if (select f.opt_events from sluice.flows f where f.flow_slug = v_run.flow_slug) then
    perform sluice.send_run_event(v_run.run_id, sluice.run_event(v_run, 'retried'));
  end if;

  -- The third rung: the tasks that get another go, in key order.
  perform 1 from sluice.step_tasks t
  where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
    and t.status in ('failed', 'cancelled')
  order by t.step_slug, t.task_index
  for update;

  for v_step in
    select t.step_slug, t.queue_name, array_agg(t.task_index order by t.task_index) as indexes,
      array_agg(t.message_id order by t.task_index) as old_ids
    from sluice.step_tasks t
    where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
      and t.status in ('failed', 'cancelled')
    group by t.step_slug, t.queue_name
    order by t.step_slug
  loop
    select array_agg(sent.id order by sent.ord) into v_ids
    from pgmq.send_batch(
      v_step.queue_name,
      array(
        select jsonb_build_object('flow_slug', v_run.flow_slug, 'run_id', v_run.run_id,
          'step_slug', v_step.step_slug, 'task_index', i.idx)
        from unnest(v_step.indexes) with ordinality as i(idx, ord)
        order by i.ord
      ),
      0
    ) with ordinality as sent(id, ord);

    update sluice.step_tasks t
    set status = 'queued', message_id = m.id, attempts_base = t.attempts_count,
      failed_at = null, cancelled_at = null, permanently_stalled_at = null, queued_at = now()
    from unnest(v_step.indexes, v_ids) as m(task_index, id)
    where t.run_id = retry_run.run_id and t.step_slug = v_step.step_slug
      and t.task_index = m.task_index;
    v_tasks := v_tasks + cardinality(v_step.indexes);

    -- The old messages' archived copies: prune finds a task's archived message by the id the
    -- task stores, which is now the new one's.
    perform sluice.delete_archived_messages(
      array_fill(v_step.queue_name, array[cardinality(v_step.old_ids)]), v_step.old_ids);
    perform sluice.notify_queue(v_step.queue_name);
  end loop;

  update sluice.step_states ss
  set status = case when ss.started_at is null then 'created' else 'started' end,
    started_at = case when ss.started_at is null then null else now() end,
    failed_at = null, cancelled_at = null, error_message = null, progress_sent_at = null,
    remaining_tasks = case when ss.started_at is null then null else (
      select count(*)::integer from sluice.step_tasks t
      where t.run_id = ss.run_id and t.step_slug = ss.step_slug and t.status <> 'completed'
    ) end
  where ss.run_id = retry_run.run_id and ss.step_slug = any (v_reset);

  update sluice.runs r
  set remaining_steps = (
    select count(*)::integer from sluice.step_states ss
    where ss.run_id = r.run_id and ss.status not in ('completed', 'skipped')
  )
  where r.run_id = retry_run.run_id;

  -- Steps that had not started start now if their dependencies are resolved.
  perform sluice.start_ready_steps(retry_run.run_id);

  select * into v_run from sluice.runs r where r.run_id = retry_run.run_id;
  return jsonb_build_object('run_id', v_run.run_id, 'outcome', 'retried',
    'status', v_run.status, 'retry_count', v_run.retry_count, 'tasks', v_tasks,
    'steps', cardinality(v_reset));
end;
$$;

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

-- Starts the concrete flow `flow_slug`, never through an alias: what a typed client does with a
-- concrete flow object, whose input type is that version's, and what a drain or a test uses to
-- reach an old version after its name was re-pointed.
CREATE OR REPLACE FUNCTION sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid DEFAULT NULL::uuid) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow_version.flow_slug,
      format('start flow %s', start_flow_version.flow_slug));
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.create_run(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id);
end;
$$;

-- start_flow_version with start options: the concrete flow `flow_slug`, never through an alias.
CREATE OR REPLACE FUNCTION sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow_version.flow_slug,
      format('start flow %s', start_flow_version.flow_slug));
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.start_with_options(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id, start_flow_version.options);
end;
$$;

revoke all on all routines in schema sluice from public;
-- Granting stays with the owner: default privileges gave the new overload to every grantee.
do $$
declare
  v_grantee text;
begin
  for v_grantee in
    select distinct a.grantee::regrole::text
    from pg_proc p cross join lateral aclexplode(p.proacl) a
    where p.oid = 'sluice.grant_access(name, text[])'::regprocedure
      and a.grantee <> p.proowner and a.grantee <> 0
  loop
    execute format('revoke execute on function sluice.grant_access(name, text[]) from %s',
      v_grantee);
  end loop;
end;
$$;
