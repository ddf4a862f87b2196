-- rate_limits: sluice.check_concurrency_options(jsonb), sluice.note_freed_slot(), sluice.refresh_runtime_options(jsonb), sluice.release_held_tasks(), sluice.release_held_tasks(text,text,text), sluice.release_noted_slots(), sluice.start_ready_steps(uuid).
-- Written by `deno task sql:migration rate_limits` from supabase/schemas/functions/ (check_concurrency_options.sql, note_freed_slot.sql, refresh_runtime_options.sql, release_held_tasks.sql, release_noted_slots.sql, start_ready_steps.sql); each routine whole, as its source reads. Then, by hand: release_noted_slots becomes security definer, the sweep deletes stale rate_limit_starts, and the triggers and view below.

-- Validates the concurrency limits of a definition's steps before anything is written, naming the
-- step and the value: options.concurrency_limit is a whole number >= 1 (or null), only on a step
-- that runs a handler; options.concurrency_key is null or a path into the run input, a non-empty
-- array of non-empty strings, and only with a limit; options.rate_limit and options.rate_period
-- (seconds) are whole numbers >= 1, both or neither, on a step that runs a handler.
CREATE OR REPLACE FUNCTION sluice.check_concurrency_options(definition jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step jsonb;
  v_slug text;
  v_limit jsonb;
  v_key jsonb;
  v_rate jsonb;
  v_period jsonb;
begin
  for v_step in select e from jsonb_array_elements(definition -> 'steps') as e loop
    v_slug := v_step ->> 'step_slug';
    v_limit := coalesce(v_step #> '{options,concurrency_limit}', 'null');
    v_key := coalesce(v_step #> '{options,concurrency_key}', 'null');
    v_rate := coalesce(v_step #> '{options,rate_limit}', 'null');
    v_period := coalesce(v_step #> '{options,rate_period}', 'null');
    perform sluice.check_whole_number(v_rate, 1,
      format('options.rate_limit of step "%s"', v_slug));
    perform sluice.check_whole_number(v_period, 1,
      format('options.rate_period of step "%s"', v_slug));
    if (v_rate = 'null') <> (v_period = 'null') then
      raise exception 'Invalid flow definition: options.rate_limit and options.rate_period of step "%" go together, got % and %',
        v_slug, v_rate, v_period
        using errcode = 'invalid_parameter_value';
    end if;
    perform sluice.check_whole_number(v_limit, 1,
      format('options.concurrency_limit of step "%s"', v_slug));
    if (v_limit <> 'null' or v_rate <> 'null') and v_step ->> 'step_type' not in ('single', 'map')
    then
      raise exception 'Invalid flow definition: the limits of step "%" need a step that runs a handler, not a % step',
        v_slug, v_step ->> 'step_type'
        using errcode = 'invalid_parameter_value';
    end if;
    if v_key <> 'null' and (jsonb_typeof(v_key) <> 'array' or jsonb_array_length(v_key) = 0
        or exists (select 1 from jsonb_array_elements(v_key) p
          where jsonb_typeof(p) <> 'string' or p #>> '{}' = ''))
    then
      raise exception 'Invalid flow definition: options.concurrency_key of step "%" must be a non-empty array of non-empty strings (a path into the run input), got %',
        v_slug, left(v_key::text, 80)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_key <> 'null' and v_limit = 'null' and v_rate = 'null' then
      raise exception 'Invalid flow definition: options.concurrency_key of step "%" needs options.concurrency_limit or options.rate_limit',
        v_slug
        using errcode = 'invalid_parameter_value';
    end if;
  end loop;
end;
$$;

-- Trigger of step_tasks (after insert of a held task, and after a status change of a limited
-- task: it was held again, claimed, or gave up its slot): notes the task's key in a
-- transaction-local setting, for the commit to release (sluice.release_noted_slots). Noting
-- instead of releasing at once lets the commit take the key locks of a whole transaction in one
-- order: two transactions that each touch several keys never wait on each other in a cycle. The
-- first claim of a rate-limited task (of its retry round) is recorded in sluice.rate_limit_starts,
-- the window its key's next release counts.
CREATE OR REPLACE FUNCTION sluice.note_freed_slot() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- A claim matters only to a rate-limited step: its window counts the claim, and its key sends
  -- the next task once this one is claimed. A concurrency-limited step's slot was taken when
  -- the task was sent.
  if tg_op = 'UPDATE' and old.status = 'queued' and new.status = 'started' then
    if old.attempts_count <> old.attempts_base then
      return null;
    end if;
    insert into sluice.rate_limit_starts (flow_slug, step_slug, rate_key, started_at)
    select new.flow_slug, new.step_slug, new.concurrency_key, new.started_at
    from sluice.steps s
    where s.flow_slug = new.flow_slug and s.step_slug = new.step_slug
      and s.opt_rate_limit is not null;
    if not found then
      return null;
    end if;
  end if;
  perform set_config('sluice.noted_slots',
    coalesce(current_setting('sluice.noted_slots', true), '')
      || jsonb_build_array(new.flow_slug, new.step_slug, new.concurrency_key)::text || E'\n',
    true);
  return null;
end;
$$;

-- Runtime options are not shape: compilation writes them, and a verified startup applies the
-- definition's values. A flow-level null means the default. Event options (their columns come
-- with 20261130001700_sluice_run_events.sql) and concurrency and rate limits are checked here, before the
-- first write of the definition's options.
CREATE OR REPLACE FUNCTION sluice.refresh_runtime_options(definition jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text := definition ->> 'flow_slug';
begin
  if coalesce(jsonb_typeof(definition #> '{options,events}'), 'null') not in ('null', 'boolean')
  then
    raise exception 'Invalid flow definition: options.events of flow "%" must be true, false or null, got %',
      v_flow, definition #> '{options,events}'
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_whole_number(definition #> '{options,progress_interval}', 0,
    format('options.progress_interval of flow "%s"', v_flow));
  perform sluice.check_whole_number(definition #> array['options', o], 1,
    format('options.%s of flow "%s"', o, v_flow))
  from unnest(array['max_input_bytes', 'max_output_bytes', 'max_map_tasks']) as o;
  perform sluice.check_concurrency_options(definition);

  update sluice.flows f
  set (opt_max_attempts, opt_base_delay, opt_timeout, opt_events, opt_progress_interval,
      opt_max_input_bytes, opt_max_output_bytes, opt_max_map_tasks)
    = (o.max_attempts, o.base_delay, o.timeout, o.events, o.progress_interval,
      o.max_input_bytes, o.max_output_bytes, o.max_map_tasks)
  from (
    select coalesce((definition #>> '{options,max_attempts}')::integer, 3) as max_attempts,
      coalesce((definition #>> '{options,base_delay}')::integer, 1) as base_delay,
      coalesce((definition #>> '{options,timeout}')::integer, 60) as timeout,
      coalesce((definition #>> '{options,events}')::boolean, true) as events,
      coalesce((definition #>> '{options,progress_interval}')::integer, 1) as progress_interval,
      coalesce((definition #>> '{options,max_input_bytes}')::integer,
        sluice.default_max_json_bytes()) as max_input_bytes,
      coalesce((definition #>> '{options,max_output_bytes}')::integer,
        sluice.default_max_json_bytes()) as max_output_bytes,
      coalesce((definition #>> '{options,max_map_tasks}')::integer,
        sluice.default_max_map_tasks()) as max_map_tasks
  ) o
  where f.flow_slug = v_flow
    and (f.opt_max_attempts, f.opt_base_delay, f.opt_timeout, f.opt_events,
      f.opt_progress_interval, f.opt_max_input_bytes, f.opt_max_output_bytes,
      f.opt_max_map_tasks)
      is distinct from (o.max_attempts, o.base_delay, o.timeout, o.events, o.progress_interval,
        o.max_input_bytes, o.max_output_bytes, o.max_map_tasks);

  update sluice.steps s
  set opt_max_attempts = (e.step #>> '{options,max_attempts}')::integer,
    opt_base_delay = (e.step #>> '{options,base_delay}')::integer,
    opt_timeout = (e.step #>> '{options,timeout}')::integer,
    opt_start_delay = (e.step #>> '{options,start_delay}')::integer,
    opt_concurrency_limit = (e.step #>> '{options,concurrency_limit}')::integer,
    opt_concurrency_key = sluice.concurrency_key_path(e.step #> '{options,concurrency_key}'),
    opt_rate_limit = (e.step #>> '{options,rate_limit}')::integer,
    opt_rate_period = (e.step #>> '{options,rate_period}')::integer
  from jsonb_array_elements(definition -> 'steps') as e(step)
  where s.flow_slug = v_flow
    and s.step_slug = e.step ->> 'step_slug'
    and (s.opt_max_attempts, s.opt_base_delay, s.opt_timeout, s.opt_start_delay,
        s.opt_concurrency_limit, s.opt_concurrency_key, s.opt_rate_limit, s.opt_rate_period)
      is distinct from (
        (e.step #>> '{options,max_attempts}')::integer,
        (e.step #>> '{options,base_delay}')::integer,
        (e.step #>> '{options,timeout}')::integer,
        (e.step #>> '{options,start_delay}')::integer,
        (e.step #>> '{options,concurrency_limit}')::integer,
        sluice.concurrency_key_path(e.step #> '{options,concurrency_key}'),
        (e.step #>> '{options,rate_limit}')::integer,
        (e.step #>> '{options,rate_period}')::integer);
end;
$$;

-- The sweep: releases the held tasks of every key that has free slots, keys in order (the order
-- every caller takes key locks in). The commit of whatever freed a slot releases its key's held
-- tasks itself (sluice.release_noted_slots); the sweep catches the rest: a limit raised by a
-- recompile, a held task that was locked when its key was released, and the transactions that
-- leave releases to it (repeatable read and serializable ones). It also deletes the claims of
-- sluice.rate_limit_starts that no window counts any more (an idle key's last ones). Every
-- worker's heartbeat calls it. Returns how many tasks it sent.
CREATE OR REPLACE FUNCTION sluice.release_held_tasks() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key record;
  v_sent integer := 0;
begin
  delete from sluice.rate_limit_starts r
  using sluice.steps s
  where s.flow_slug = r.flow_slug and s.step_slug = r.step_slug
    and r.started_at <= clock_timestamp() - make_interval(secs => coalesce(s.opt_rate_period, 0));
  for v_key in
    select distinct t.flow_slug, t.step_slug, t.concurrency_key
    from sluice.step_tasks t
    where t.concurrency_key is not null and t.message_id is null and t.status = 'queued'
    order by t.flow_slug, t.step_slug, t.concurrency_key
  loop
    v_sent := v_sent + sluice.release_held_tasks(v_key.flow_slug, v_key.step_slug,
      v_key.concurrency_key);
  end loop;
  return v_sent;
end;
$$;

-- Sends the held tasks of one key of a limited step that fit in its free slots, oldest first, and
-- returns how many it sent. The key's transaction advisory lock serializes the decision: a slot
-- counted free here is not taken by a concurrent caller, and the lock is held until commit, so the
-- next caller counts this one's messages. It never waits on a row lock while it holds the key: a
-- held task another transaction has locked (a cancel ending its run) is skipped. A step whose
-- limits were removed sends every held task. A concurrency-limited step's start delay counts from
-- the release.
-- A rate-limited step (opt_rate_limit per opt_rate_period seconds) sends one task at a time per
-- key, and only once the one sent before it was claimed: it becomes visible when the window of the
-- key's last opt_rate_limit first claims (sluice.rate_limit_starts) has room, so every window of
-- opt_rate_period seconds holds at most opt_rate_limit first claims, however late workers read.
-- Lock order: the key's advisory lock -> step_tasks (skip locked) -> messages.
CREATE OR REPLACE FUNCTION sluice.release_held_tasks(flow_slug text, step_slug text, concurrency_key text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step record;
  v_free bigint;
  v_runs uuid[];
  v_indexes integer[];
  v_ids bigint[];
  v_visible_at timestamptz;
begin
  select s.opt_concurrency_limit, s.queue_name, coalesce(s.opt_start_delay, 0) as start_delay,
    s.opt_rate_limit, s.opt_rate_period
  into v_step
  from sluice.steps s
  where s.flow_slug = release_held_tasks.flow_slug and s.step_slug = release_held_tasks.step_slug;
  if not found then
    return 0;
  end if;
  perform pg_advisory_xact_lock(hashtextextended(format('sluice.slots:%s/%s/%s',
    release_held_tasks.flow_slug, release_held_tasks.step_slug,
    release_held_tasks.concurrency_key), 0));

  select coalesce(v_step.opt_concurrency_limit, 2147483647) - count(*) into v_free
  from sluice.step_tasks t
  where t.flow_slug = release_held_tasks.flow_slug and t.step_slug = release_held_tasks.step_slug
    and t.concurrency_key = release_held_tasks.concurrency_key
    and t.message_id is not null and t.status in ('queued', 'started');
  if v_free <= 0 then
    return 0;
  end if;

  if v_step.opt_rate_limit is not null then
    -- A task sent and not yet claimed (in its first attempt of the round) sends the next one when
    -- its claim commits.
    if exists (
      select 1 from sluice.step_tasks t
      where t.flow_slug = release_held_tasks.flow_slug
        and t.step_slug = release_held_tasks.step_slug
        and t.concurrency_key = release_held_tasks.concurrency_key
        and t.message_id is not null and t.status = 'queued'
        and t.attempts_count = t.attempts_base
    ) then
      return 0;
    end if;
    delete from sluice.rate_limit_starts r
    where r.flow_slug = release_held_tasks.flow_slug and r.step_slug = release_held_tasks.step_slug
      and r.rate_key = release_held_tasks.concurrency_key
      and r.started_at <= clock_timestamp() - make_interval(secs => v_step.opt_rate_period);
    select greatest(clock_timestamp() + make_interval(secs => v_step.start_delay),
      coalesce(max(w.started_at) + make_interval(secs => v_step.opt_rate_period), '-infinity'))
    into v_visible_at
    from (
      select r.started_at from sluice.rate_limit_starts r
      where r.flow_slug = release_held_tasks.flow_slug
        and r.step_slug = release_held_tasks.step_slug
        and r.rate_key = release_held_tasks.concurrency_key
      order by r.started_at desc
      offset v_step.opt_rate_limit - 1
      limit 1
    ) w;
    v_free := 1;
  end if;

  select array_agg(h.run_id order by h.queued_at, h.run_id, h.task_index),
    array_agg(h.task_index order by h.queued_at, h.run_id, h.task_index)
  into v_runs, v_indexes
  from (
    select t.run_id, t.task_index, t.queued_at
    from sluice.step_tasks t
    where t.flow_slug = release_held_tasks.flow_slug
      and t.step_slug = release_held_tasks.step_slug
      and t.concurrency_key = release_held_tasks.concurrency_key
      and t.message_id is null and t.status = 'queued'
    order by t.queued_at, t.run_id, t.task_index
    limit v_free
    for update skip locked
  ) h;
  if v_runs is null then
    return 0;
  end if;

  select array_agg(sent.id order by sent.ord) into v_ids
  from pgmq.send_batch(
    v_step.queue_name,
    array(
      select jsonb_build_object('flow_slug', release_held_tasks.flow_slug, 'run_id', m.run_id,
        'step_slug', release_held_tasks.step_slug, 'task_index', m.task_index)
      from unnest(v_runs, v_indexes) with ordinality as m(run_id, task_index, ord)
      order by m.ord
    ),
    coalesce(v_visible_at, clock_timestamp() + make_interval(secs => v_step.start_delay))
  ) with ordinality as sent(id, ord);

  update sluice.step_tasks t
  set message_id = m.id
  from unnest(v_runs, v_indexes, v_ids) as m(run_id, task_index, id)
  where t.run_id = m.run_id and t.step_slug = release_held_tasks.step_slug
    and t.task_index = m.task_index;

  if coalesce(v_visible_at, clock_timestamp() + make_interval(secs => v_step.start_delay))
    <= clock_timestamp()
  then
    perform sluice.notify_queue(v_step.queue_name);
  end if;
  return cardinality(v_ids);
end;
$$;

CREATE OR REPLACE FUNCTION sluice.start_ready_steps(run_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run_input jsonb;
  v_step record;
  v_input jsonb;
  v_source jsonb;
  v_count integer;
  v_ids bigint[];
  v_delay integer;
  v_key text;
begin
  loop
    select s.*, ss.step_slug as ready_slug into v_step
    from sluice.step_states ss
    join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
    where ss.run_id = start_ready_steps.run_id
      and ss.status = 'created'
      and ss.remaining_deps = 0
    order by s.step_index
    limit 1;
    exit when not found;

    -- A map over a skipped step has nothing to map. Skipping it with its dependents keeps the
    -- typed promise that a map's output is present wherever the map itself cannot be skipped.
    if v_step.map_source is not null and exists (
      select 1 from sluice.step_states ds
      where ds.run_id = start_ready_steps.run_id
        and ds.step_slug = v_step.map_source
        and ds.status = 'skipped'
    ) then
      perform sluice.skip_steps(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, 'dependency_skipped', true
      );
      continue;
    end if;

    -- A wait step holds no task and no message: it waits in its step state (sluice.begin_wait);
    -- a subflow step waits for its child runs, which begin_wait starts.
    if v_step.step_type in ('sleep', 'signal', 'subflow') then
      perform sluice.begin_wait(start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug,
        v_step.step_type, v_step.deps_count, v_step.wait_options);
      continue;
    end if;

    -- Only root steps need the run input: most calls (after a completion) never read the run.
    if v_run_input is null and v_step.deps_count = 0 then
      select r.input into v_run_input from sluice.runs r where r.run_id = start_ready_steps.run_id;
    end if;

    if v_step.deps_count = 0 then
      v_input := v_run_input;
    else
      v_input := sluice.dependency_outputs(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug
      );
    end if;

    if (v_step.required_input_pattern is not null
        and not v_input @> v_step.required_input_pattern)
      or (v_step.forbidden_input_pattern is not null
        and v_input @> v_step.forbidden_input_pattern)
    then
      if v_step.when_unmet = 'fail' then
        perform sluice.fail_run(
          start_ready_steps.run_id, v_step.step_slug,
          format('condition of step "%s" is unmet', v_step.step_slug)
        );
        return;
      end if;
      perform sluice.skip_steps(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, 'condition_unmet',
        v_step.when_unmet = 'skip-cascade'
      );
      continue;
    end if;

    if v_step.step_type = 'map' then
      if v_step.map_source is null then
        v_source := v_run_input;
      else
        select ds.output into v_source
        from sluice.step_states ds
        where ds.run_id = start_ready_steps.run_id and ds.step_slug = v_step.map_source;
      end if;
      if jsonb_typeof(v_source) is distinct from 'array' then
        raise exception 'Cannot start map step "%" of run %: it needs an array, got %',
          v_step.step_slug, start_ready_steps.run_id, coalesce(jsonb_typeof(v_source), 'null')
          using errcode = 'invalid_parameter_value';
      end if;
      v_count := jsonb_array_length(v_source);
      -- The fan-out limit: the whole statement (a start or a completion) fails, nothing stays.
      if v_count > (select f.opt_max_map_tasks from sluice.flows f
          where f.flow_slug = v_step.flow_slug) then
        raise exception 'Cannot start map step "%" of run %: it maps over % elements, more than the limit of % tasks (max_map_tasks)',
          v_step.step_slug, start_ready_steps.run_id, v_count,
          (select f.opt_max_map_tasks from sluice.flows f where f.flow_slug = v_step.flow_slug)
          using errcode = 'SLL01', detail = json_build_object('limit', 'max_map_tasks',
            'size', v_count, 'max', (select f.opt_max_map_tasks from sluice.flows f
              where f.flow_slug = v_step.flow_slug))::text;
      end if;
    else
      v_count := 1;
    end if;

    if v_count = 0 then
      perform sluice.complete_step(
        start_ready_steps.run_id, v_step.flow_slug, v_step.step_slug, '[]'::jsonb
      );
      continue;
    end if;

    v_delay := coalesce(v_step.opt_start_delay, 0);
    -- A limited step's tasks are held: no message until their commit finds them a slot
    -- (sluice.release_noted_slots); an unlimited step's tasks are sent now.
    if v_step.opt_concurrency_limit is not null or v_step.opt_rate_limit is not null then
      v_key := sluice.task_concurrency_key(start_ready_steps.run_id, v_step.opt_concurrency_key);
      v_ids := array_fill(null::bigint, array[v_count]);
    else
      v_key := null;
      select array_agg(sent.id order by sent.ord) into v_ids
      from pgmq.send_batch(
        v_step.queue_name,
        array(
          select jsonb_build_object(
            'flow_slug', v_step.flow_slug,
            'run_id', start_ready_steps.run_id,
            'step_slug', v_step.step_slug,
            'task_index', i
          )
          from generate_series(0, v_count - 1) as i
          order by i
        ),
        v_delay
      ) with ordinality as sent(id, ord);
    end if;

    -- A map task gets its element now, in one pass over the array: a claim that read it from the
    -- array would detoast the whole array for every task, a cost that grows with the map's width.
    insert into sluice.step_tasks (
      run_id, step_slug, task_index, flow_slug, queue_name, message_id, input, concurrency_key
    )
    select start_ready_steps.run_id, v_step.step_slug, (m.ord - 1)::integer, v_step.flow_slug,
      v_step.queue_name, m.id, e.value, v_key
    from unnest(v_ids) with ordinality as m(id, ord)
    left join jsonb_array_elements(
      case when v_step.step_type = 'map' then v_source end
    ) with ordinality as e(value, ord) on e.ord = m.ord;

    update sluice.step_states ss
    set status = 'started', started_at = now(), initial_tasks = v_count, remaining_tasks = v_count
    where ss.run_id = start_ready_steps.run_id and ss.step_slug = v_step.step_slug;

    if v_delay = 0 and v_key is null then
      perform sluice.notify_queue(v_step.queue_name);
    end if;
  end loop;

  perform sluice.finish_run_if_done(start_ready_steps.run_id);
end;
$$;

-- Deferred constraint trigger of step_tasks (fires at commit for each row note_freed_slot noted):
-- the first firing releases every noted key, in key order, and clears the notes; the later
-- firings find none. Under repeatable read or serializable, whose snapshot would not count the
-- slots a concurrent commit took, it leaves the keys to the sweep (sluice.release_held_tasks()).
-- Security definer: a deferred trigger runs at commit as the session's role, which is not the
-- definer's when the start came through sluice.start_run (a browser's role may touch nothing of
-- sluice); it releases only keys noted by rows its transaction changed, as the sweep would.
-- Lock order: the key advisory locks in (flow_slug, step_slug, concurrency_key) order.
CREATE OR REPLACE FUNCTION sluice.release_noted_slots() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_notes text := current_setting('sluice.noted_slots', true);
  v_key record;
begin
  if v_notes is null or v_notes = '' then
    return null;
  end if;
  perform set_config('sluice.noted_slots', '', true);
  if current_setting('transaction_isolation') <> 'read committed' then
    return null;
  end if;
  for v_key in
    select distinct n.note ->> 0 as flow_slug, n.note ->> 1 as step_slug,
      n.note ->> 2 as concurrency_key
    from unnest(string_to_array(rtrim(v_notes, E'\n'), E'\n')) as l(line)
    cross join lateral (select l.line::jsonb as note) n
    order by 1, 2, 3
  loop
    perform sluice.release_held_tasks(v_key.flow_slug, v_key.step_slug, v_key.concurrency_key);
  end loop;
  return null;
end;
$$;

-- Every status change of a limited task now notes its key (it was also claimed: a rate-limited
-- key sends its next task when the one before is claimed), instead of only the changes that free
-- a slot or hold a task again.
drop trigger step_tasks_note_freed on sluice.step_tasks;
drop trigger step_tasks_release_freed on sluice.step_tasks;

create trigger step_tasks_note_changed
  after update of status on sluice.step_tasks
  for each row when (old.concurrency_key is not null and old.status is distinct from new.status)
  execute function sluice.note_freed_slot();

create constraint trigger step_tasks_release_changed
  after update of status on sluice.step_tasks
  deferrable initially deferred
  for each row when (old.concurrency_key is not null and old.status is distinct from new.status)
  execute function sluice.release_noted_slots();

-- The view gains the rate limit of each key's step.
create or replace view sluice.concurrency_slots as
with slots as (
  select t.flow_slug, t.step_slug, t.concurrency_key, count(*)::integer as slots_in_use,
    (count(*) filter (where t.status = 'started'))::integer as running
  from sluice.step_tasks t
  where t.concurrency_key is not null and t.message_id is not null
    and t.status in ('queued', 'started')
  group by t.flow_slug, t.step_slug, t.concurrency_key
), held as (
  select t.flow_slug, t.step_slug, t.concurrency_key, count(*)::integer as held,
    min(t.queued_at) as oldest_held_at
  from sluice.step_tasks t
  where t.concurrency_key is not null and t.message_id is null and t.status = 'queued'
  group by t.flow_slug, t.step_slug, t.concurrency_key
)
select k.flow_slug, k.step_slug, k.concurrency_key, s.opt_concurrency_limit as concurrency_limit,
  coalesce(sl.slots_in_use, 0) as slots_in_use, coalesce(sl.running, 0) as running,
  coalesce(h.held, 0) as held, h.oldest_held_at,
  extract(epoch from now() - h.oldest_held_at)::integer as oldest_held_age_sec,
  s.opt_rate_limit as rate_limit, s.opt_rate_period as rate_period
from (select flow_slug, step_slug, concurrency_key from slots
  union select flow_slug, step_slug, concurrency_key from held) k
join sluice.steps s on s.flow_slug = k.flow_slug and s.step_slug = k.step_slug
left join slots sl on (sl.flow_slug, sl.step_slug, sl.concurrency_key)
  = (k.flow_slug, k.step_slug, k.concurrency_key)
left join held h on (h.flow_slug, h.step_slug, h.concurrency_key)
  = (k.flow_slug, k.step_slug, k.concurrency_key);

revoke all on all routines in schema sluice from public;
