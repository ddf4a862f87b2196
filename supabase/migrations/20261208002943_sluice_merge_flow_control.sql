-- merge_flow_control: sluice.check_start_options(text,jsonb), sluice.retry_run(uuid,boolean), sluice.start_ready_steps(uuid), sluice.start_with_options(text,text,jsonb,uuid,jsonb).
-- Written by `deno task sql:migration merge_flow_control` from supabase/schemas/functions/ (check_start_options.sql, retry_run.sql, start_ready_steps.sql, start_with_options.sql); each routine whole, as its source reads.

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only. As in migration 20261207001300, and
-- `debounce` (check_debounce_option), which takes neither an idempotency key nor a run id, and
-- `priority` (check_priority_option), and `concurrency_key` (a string like an idempotency key; a
-- debounced run does not exist before it is due, so it takes its key from its input's path only).
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
  where k not in ('idempotency_key', 'debounce', 'priority', 'concurrency_key')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: idempotency_key, debounce, priority, concurrency_key';
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
  if check_start_options.options ? 'priority' then
    perform sluice.check_priority_option(check_start_options.flow_ref,
      check_start_options.options -> 'priority');
  end if;
  if check_start_options.options ? 'debounce' then
    perform sluice.check_debounce_option(check_start_options.flow_ref,
      check_start_options.options -> 'debounce');
    if v_key is not null and jsonb_typeof(v_key) <> 'null' then
      raise exception 'Cannot start flow "%": debounce and idempotency_key cannot be combined',
        check_start_options.flow_ref
        using errcode = 'invalid_parameter_value',
          hint = 'A debounced start already returns the pending run of its key';
    end if;
    if v_concurrency_key is not null and jsonb_typeof(v_concurrency_key) <> 'null' then
      raise exception 'Cannot start flow "%": debounce and concurrency_key cannot be combined',
        check_start_options.flow_ref
        using errcode = 'invalid_parameter_value',
          hint = 'A debounced run can take its concurrency key from a path into its input (the step''s concurrency.key)';
    end if;
  end if;
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

-- As in migration 20261207234003, except that a task takes its run's priority.
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
    -- A task takes its run's priority (docs/flow_control.md#priorities), read once per step.
    insert into sluice.step_tasks (
      run_id, step_slug, task_index, flow_slug, queue_name, message_id, input, concurrency_key,
      priority
    )
    select start_ready_steps.run_id, v_step.step_slug, (m.ord - 1)::integer, v_step.flow_slug,
      v_step.queue_name, m.id, e.value, v_key,
      (select r.priority from sluice.runs r where r.run_id = start_ready_steps.run_id)
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
-- options. As in migration 20261207232000, except that a new run (or a pending debounced start)
-- gets the start's `priority` (apply_run_priority), and a new run's `concurrency_key` is stored for
-- it before it is created (store_run_concurrency_key), so that its limited steps count under it.
CREATE OR REPLACE FUNCTION sluice.start_with_options(flow_slug text, started_via text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text := start_with_options.options ->> 'idempotency_key';
  v_concurrency_key text := start_with_options.options ->> 'concurrency_key';
  v_priority integer;
  v_run uuid;
  v_existing uuid;
  v_existing_input jsonb;
begin
  perform sluice.check_start_options(start_with_options.started_via, start_with_options.options);
  v_priority := coalesce((start_with_options.options ->> 'priority')::integer, 0);
  if start_with_options.options ? 'debounce' then
    if start_with_options.run_id is not null then
      raise exception 'Cannot start flow "%": a debounced start takes no run id (got %): its run id is the pending start''s',
        start_with_options.started_via, start_with_options.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    v_run := sluice.start_debounced(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, start_with_options.options -> 'debounce');
    -- The last start's priority is the run's, as its input is.
    update sluice.debounced_starts d set priority = v_priority
    where d.run_id = v_run and d.priority <> v_priority;
    return v_run;
  end if;
  v_run := coalesce(start_with_options.run_id, gen_random_uuid());
  if v_key is null then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    perform sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
    perform sluice.apply_run_priority(v_run, v_priority);
    return v_run;
  end if;

  insert into sluice.idempotency_keys (flow_ref, idempotency_key, run_id)
  values (start_with_options.started_via, v_key, v_run)
  on conflict do nothing;
  if found then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    perform sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
    perform sluice.apply_run_priority(v_run, v_priority);
    return v_run;
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
