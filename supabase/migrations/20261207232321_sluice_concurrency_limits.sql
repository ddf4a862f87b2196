-- sluice_concurrency_limits: sluice.check_concurrency_options(jsonb), sluice.check_start_options(text,jsonb), sluice.concurrency_key_path(jsonb), sluice.note_freed_slot(), sluice.refresh_runtime_options(jsonb), sluice.reject_task_identity_change(), sluice.release_held_tasks(), sluice.release_held_tasks(text,text,text), sluice.release_noted_slots(), sluice.retry_run(uuid,boolean), sluice.start_ready_steps(uuid), sluice.start_with_options(text,text,jsonb,uuid,jsonb), sluice.store_run_concurrency_key(uuid,text), sluice.task_concurrency_key(uuid,text[]).
-- Written by `deno task sql:migration sluice_concurrency_limits` from supabase/schemas/functions/ (check_concurrency_options.sql, check_start_options.sql, concurrency_key_path.sql, note_freed_slot.sql, refresh_runtime_options.sql, reject_task_identity_change.sql, release_held_tasks.sql, release_noted_slots.sql, retry_run.sql, start_ready_steps.sql, start_with_options.sql, store_run_concurrency_key.sql, task_concurrency_key.sql); each routine whole, as its source reads.

-- Validates the concurrency limits of a definition's steps before anything is written, naming the
-- step and the value: options.concurrency_limit is a whole number >= 1 (or null), only on a step
-- that runs a handler; options.concurrency_key is null or a path into the run input, a non-empty
-- array of non-empty strings, and only with a limit.
CREATE OR REPLACE FUNCTION sluice.check_concurrency_options(definition jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step jsonb;
  v_slug text;
  v_limit jsonb;
  v_key jsonb;
begin
  for v_step in select e from jsonb_array_elements(definition -> 'steps') as e loop
    v_slug := v_step ->> 'step_slug';
    v_limit := coalesce(v_step #> '{options,concurrency_limit}', 'null');
    v_key := coalesce(v_step #> '{options,concurrency_key}', 'null');
    perform sluice.check_whole_number(v_limit, 1,
      format('options.concurrency_limit of step "%s"', v_slug));
    if v_limit <> 'null' and v_step ->> 'step_type' not in ('single', 'map') then
      raise exception 'Invalid flow definition: options.concurrency_limit of step "%" needs a step that runs a handler, not a % step',
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
    if v_key <> 'null' and v_limit = 'null' then
      raise exception 'Invalid flow definition: options.concurrency_key of step "%" needs options.concurrency_limit',
        v_slug
        using errcode = 'invalid_parameter_value';
    end if;
  end loop;
end;
$$;

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only.
CREATE OR REPLACE FUNCTION sluice.check_start_options(flow_ref text, options jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_unknown text;
  v_key jsonb := check_start_options.options -> 'idempotency_key';
  v_concurrency_key jsonb := check_start_options.options -> 'concurrency_key';
begin
  if check_start_options.options is null then
    return;
  end if;
  if jsonb_typeof(check_start_options.options) <> 'object' then
    raise exception 'Cannot start flow "%": options must be a JSON object, got %',
      check_start_options.flow_ref, jsonb_typeof(check_start_options.options)
      using errcode = 'invalid_parameter_value';
  end if;
  select k into v_unknown
  from jsonb_object_keys(check_start_options.options) k
  where k not in ('idempotency_key', 'concurrency_key')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: concurrency_key, idempotency_key';
  end if;
  if v_key is not null and jsonb_typeof(v_key) <> 'null' and (jsonb_typeof(v_key) <> 'string'
      or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": idempotency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(), left(v_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
  if v_concurrency_key is not null and jsonb_typeof(v_concurrency_key) <> 'null'
    and (jsonb_typeof(v_concurrency_key) <> 'string'
      or length(v_concurrency_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": concurrency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(),
      left(v_concurrency_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- A definition's concurrency key path (a JSON array of strings, or null) as the text[] the step
-- stores.
CREATE OR REPLACE FUNCTION sluice.concurrency_key_path(path jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when jsonb_typeof(concurrency_key_path.path) = 'array' then
    array(select p from jsonb_array_elements_text(concurrency_key_path.path)
      with ordinality as e(p, ord) order by e.ord)
  end
$$;

-- Trigger of step_tasks (after insert or update of a limited task that was held, or that gave up
-- its slot): notes the task's key in a transaction-local setting, for the commit to release
-- (sluice.release_noted_slots). Noting instead of releasing at once lets the commit take the key
-- locks of a whole transaction in one order: two transactions that each free slots of several
-- keys never wait on each other in a cycle.
CREATE OR REPLACE FUNCTION sluice.note_freed_slot() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform set_config('sluice.noted_slots',
    coalesce(current_setting('sluice.noted_slots', true), '')
      || jsonb_build_array(new.flow_slug, new.step_slug, new.concurrency_key)::text || E'\n',
    true);
  return null;
end;
$$;

-- Runtime options are not shape: compilation writes them, and a verified startup applies the
-- definition's values. A flow-level null means the default. Event options (their columns come
-- with 20261130001700_sluice_run_events.sql) and concurrency limits are checked here, before the
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
    opt_concurrency_key = sluice.concurrency_key_path(e.step #> '{options,concurrency_key}')
  from jsonb_array_elements(definition -> 'steps') as e(step)
  where s.flow_slug = v_flow
    and s.step_slug = e.step ->> 'step_slug'
    and (s.opt_max_attempts, s.opt_base_delay, s.opt_timeout, s.opt_start_delay,
        s.opt_concurrency_limit, s.opt_concurrency_key)
      is distinct from (
        (e.step #>> '{options,max_attempts}')::integer,
        (e.step #>> '{options,base_delay}')::integer,
        (e.step #>> '{options,timeout}')::integer,
        (e.step #>> '{options,start_delay}')::integer,
        (e.step #>> '{options,concurrency_limit}')::integer,
        sluice.concurrency_key_path(e.step #> '{options,concurrency_key}'));
end;
$$;

-- A task's flow and queue never change; its message changes only when a retry gives a finished
-- task (failed, cancelled) a fresh attempt: the old message was archived when the task ended,
-- and the new one is sent to the same stored queue (or, for a limited step's task, none yet: the
-- task is held until a slot frees, sluice.release_held_tasks).
CREATE OR REPLACE FUNCTION sluice.reject_task_identity_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if new.flow_slug is distinct from old.flow_slug
    or new.queue_name is distinct from old.queue_name
    or (old.message_id is not null and new.message_id is distinct from old.message_id
      and not (old.status in ('failed', 'cancelled') and new.status = 'queued'
        and (new.message_id is not null or new.concurrency_key is not null)))
  then
    raise exception 'Cannot change the identity of task (%, %, %): flow_slug, queue_name and message_id are immutable',
      old.run_id, old.step_slug, old.task_index
      using errcode = 'integrity_constraint_violation';
  end if;
  return new;
end;
$$;

-- Sends the held tasks of one key of a limited step that fit in its free slots, oldest first, and
-- returns how many it sent. The key's transaction advisory lock serializes the decision: a slot
-- counted free here is not taken by a concurrent caller, and the lock is held until commit, so the
-- next caller counts this one's messages. It never waits on a row lock while it holds the key: a
-- held task another transaction has locked (a cancel ending its run) is skipped. A step whose
-- limit was removed sends every held task. A limited step's start delay counts from the release.
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
begin
  select s.opt_concurrency_limit, s.queue_name, coalesce(s.opt_start_delay, 0) as start_delay
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
    v_step.start_delay
  ) with ordinality as sent(id, ord);

  update sluice.step_tasks t
  set message_id = m.id
  from unnest(v_runs, v_indexes, v_ids) as m(run_id, task_index, id)
  where t.run_id = m.run_id and t.step_slug = release_held_tasks.step_slug
    and t.task_index = m.task_index;

  if v_step.start_delay = 0 then
    perform sluice.notify_queue(v_step.queue_name);
  end if;
  return cardinality(v_ids);
end;
$$;

-- The sweep: releases the held tasks of every key that has free slots, keys in order (the order
-- every caller takes key locks in). The commit of whatever freed a slot releases its key's held
-- tasks itself (sluice.release_noted_slots); the sweep catches the rest: a limit raised by a
-- recompile, a held task that was locked when its key was released, and the transactions that
-- leave releases to it (repeatable read and serializable ones). Every worker's heartbeat calls it.
-- Returns how many tasks it sent.
CREATE OR REPLACE FUNCTION sluice.release_held_tasks() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key record;
  v_sent integer := 0;
begin
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

-- Deferred constraint trigger of step_tasks (fires at commit for each row note_freed_slot noted):
-- the first firing releases every noted key, in key order, and clears the notes; the later
-- firings find none. Under repeatable read or serializable, whose snapshot would not count the
-- slots a concurrent commit took, it leaves the keys to the sweep (sluice.release_held_tasks()).
-- Lock order: the key advisory locks in (flow_slug, step_slug, concurrency_key) order.
CREATE OR REPLACE FUNCTION sluice.release_noted_slots() RETURNS trigger
    LANGUAGE plpgsql
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
      array_agg(t.message_id order by t.task_index) as old_ids,
      bool_or(t.concurrency_key is not null) as limited
    from sluice.step_tasks t
    where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
      and t.status in ('failed', 'cancelled')
    group by t.step_slug, t.queue_name
    order by t.step_slug
  loop
    -- A limited step's tasks are held again: the commit sends those its slots have room for
    -- (sluice.release_noted_slots).
    if v_step.limited then
      v_ids := array_fill(null::bigint, array[cardinality(v_step.indexes)]);
    else
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
    end if;

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
    if v_step.opt_concurrency_limit is not null then
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

-- Creates a run of the concrete flow `flow_slug`, started as `started_via`, honouring the start
-- options: with an idempotency key it claims the key first and, when an earlier start of the same
-- name holds it, returns that start's run instead (or raises SLI01 when that run's input differs:
-- the same key for other work is a caller's bug, not a retry).
CREATE OR REPLACE FUNCTION sluice.start_with_options(flow_slug text, started_via text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text := start_with_options.options ->> 'idempotency_key';
  v_concurrency_key text := start_with_options.options ->> 'concurrency_key';
  v_run uuid;
  v_existing uuid;
  v_existing_input jsonb;
begin
  perform sluice.check_start_options(start_with_options.started_via, start_with_options.options);
  v_run := coalesce(start_with_options.run_id, gen_random_uuid());
  if v_key is null then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    return sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
  end if;

  insert into sluice.idempotency_keys (flow_ref, idempotency_key, run_id)
  values (start_with_options.started_via, v_key, v_run)
  on conflict do nothing;
  if found then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    return sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
  end if;

  -- The conflict waited for the key's claimer to commit: this statement's snapshot sees its row
  -- (under read committed; repeatable read raised a serialization failure in the insert).
  select k.run_id, r.input into v_existing, v_existing_input
  from sluice.idempotency_keys k
  join sluice.runs r on r.run_id = k.run_id
  where k.flow_ref = start_with_options.started_via and k.idempotency_key = v_key;
  if not found then
    raise exception 'Cannot start flow "%": idempotency key "%" is held by a transaction this one cannot see; retry',
      start_with_options.started_via, v_key
      using errcode = 'serialization_failure';
  end if;
  if v_existing_input is distinct from start_with_options.input then
    raise exception 'Cannot start flow "%": idempotency key "%" already started run % with another input',
      start_with_options.started_via, v_key, v_existing
      using errcode = 'SLI01',
        detail = json_build_object('idempotency_key', v_key, 'run_id', v_existing)::text,
        hint = 'Use a new key for new work; a retry of the same start passes the same input';
  end if;
  return v_existing;
end;
$$;

-- Records the concurrency key a start gave the run it is about to create (nothing for none), for
-- its limited steps to count under (sluice.task_concurrency_key). A run id that already exists
-- keeps its key: create_run then refuses the start, naming the run.
CREATE OR REPLACE FUNCTION sluice.store_run_concurrency_key(run_id uuid, concurrency_key text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  insert into sluice.run_concurrency_keys (run_id, concurrency_key)
  select store_run_concurrency_key.run_id, store_run_concurrency_key.concurrency_key
  where store_run_concurrency_key.concurrency_key is not null
  on conflict do nothing
$$;

-- The key a limited step's task of a run counts under: the run input's value at the step's key
-- path (its text; '' where the path is absent), else the run's start concurrency key, else ''
-- (one limit shared by every run).
CREATE OR REPLACE FUNCTION sluice.task_concurrency_key(run_id uuid, key_path text[]) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case
    when task_concurrency_key.key_path is not null then coalesce((
      select r.input #>> task_concurrency_key.key_path from sluice.runs r
      where r.run_id = task_concurrency_key.run_id), '')
    else coalesce((
      select k.concurrency_key from sluice.run_concurrency_keys k
      where k.run_id = task_concurrency_key.run_id), '')
  end
$$;

-- A limited task that is held (a new task, or one a retry gives another go) or that gives up its
-- slot (it ends) notes its key at once; the deferred triggers release the noted keys at commit,
-- in key order (sluice.release_noted_slots). Unlimited tasks never match the conditions: their
-- statements pay for the conditions only.
create trigger step_tasks_note_held
  after insert on sluice.step_tasks
  for each row when (new.concurrency_key is not null and new.message_id is null)
  execute function sluice.note_freed_slot();

create trigger step_tasks_note_freed
  after update of status on sluice.step_tasks
  for each row when (old.concurrency_key is not null
    and ((old.status in ('queued', 'started') and new.status not in ('queued', 'started'))
      or (new.status = 'queued' and new.message_id is null and old.status <> 'queued')))
  execute function sluice.note_freed_slot();

create constraint trigger step_tasks_release_held
  after insert on sluice.step_tasks
  deferrable initially deferred
  for each row when (new.concurrency_key is not null and new.message_id is null)
  execute function sluice.release_noted_slots();

create constraint trigger step_tasks_release_freed
  after update of status on sluice.step_tasks
  deferrable initially deferred
  for each row when (old.concurrency_key is not null
    and ((old.status in ('queued', 'started') and new.status not in ('queued', 'started'))
      or (new.status = 'queued' and new.message_id is null and old.status <> 'queued')))
  execute function sluice.release_noted_slots();

-- Monitoring (docs/monitoring.md): per key of every limited step that has work, the slots in
-- use (tasks sent and not yet ended), how many of them run, the held tasks and the oldest wait.
create view sluice.concurrency_slots as
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
  extract(epoch from now() - h.oldest_held_at)::integer as oldest_held_age_sec
from (select flow_slug, step_slug, concurrency_key from slots
  union select flow_slug, step_slug, concurrency_key from held) k
join sluice.steps s on s.flow_slug = k.flow_slug and s.step_slug = k.step_slug
left join slots sl on (sl.flow_slug, sl.step_slug, sl.concurrency_key)
  = (k.flow_slug, k.step_slug, k.concurrency_key)
left join held h on (h.flow_slug, h.step_slug, h.concurrency_key)
  = (k.flow_slug, k.step_slug, k.concurrency_key);

comment on view sluice.concurrency_slots is
  'Per key of each concurrency-limited step with work: its limit, slots in use, running tasks, held tasks and the oldest held task''s wait.';

-- New routines and the view: no role but sluice's own may use them until granted (grant_access).
revoke all on all routines in schema sluice from public;
revoke all on sluice.concurrency_slots from public;
