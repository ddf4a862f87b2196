-- attempt_telemetry: sluice.complete_tasks(jsonb), sluice.start_tasks(text,bigint[],uuid,jsonb).
-- Written by `deno task sql:migration attempt_telemetry` from supabase/schemas/functions/ (complete_tasks.sql, start_tasks.sql); each routine whole, as its source reads.

CREATE OR REPLACE FUNCTION sluice.complete_tasks(results jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_missing record;
  v_run uuid;
  v_step text;
  v_run_ids uuid[];
  v_step_slugs text[];
  v_released uuid[] := '{}';
  v_state sluice.step_states;
  v_step_type text;
  v_n integer;
  v_queues text[];
  v_ids bigint[];
  v_applied integer := 0;
  v_archive_queues text[] := '{}';
  v_archive_ids bigint[] := '{}';
  v_done_keys text[] := '{}';
  v_keys text[];
  v_stale jsonb;
  v_finished jsonb;
  v_fenced uuid[];
  v_results jsonb := complete_tasks.results;
begin
  if jsonb_typeof(complete_tasks.results) is distinct from 'array' then
    raise exception 'Cannot complete tasks: results must be a JSON array of {run_id, step_slug, task_index, attempt, worker_id, output}, got %',
      coalesce(jsonb_typeof(complete_tasks.results), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  select x.run_id, x.step_slug, x.task_index into v_missing
  from jsonb_to_recordset(complete_tasks.results)
    as x(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid)
  where x.attempt is null or x.worker_id is null
  limit 1;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): attempt and worker_id are required, the fencing token its claim handed out',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index
      using errcode = 'invalid_parameter_value';
  end if;

  -- A fenced worker's results are set aside before any check: they are all stale.
  select array_agg(w.worker_id) into v_fenced
  from (
    select distinct x.worker_id
    from jsonb_to_recordset(complete_tasks.results) as x(worker_id uuid)
  ) w
  where sluice.worker_fenced(w.worker_id);
  if v_fenced is not null then
    select coalesce(jsonb_agg(r.value order by r.ord), '[]'::jsonb) into v_results
    from jsonb_array_elements(complete_tasks.results) with ordinality as r(value, ord)
    where not ((r.value ->> 'worker_id')::uuid = any (v_fenced));
  end if;

  -- A result naming no task, else one over its flow's output size limit, before anything is
  -- written: one statement for both checks (a missing task is reported first).
  -- The task is looked up by a subquery per result, one index probe each: as a join, planned
  -- for the batch's estimated 100 rows, it could read every task.
  select x.run_id, x.step_slug, x.task_index, x.flow_slug is null as missing, x.bytes,
    f.opt_max_output_bytes as max_bytes
  into v_missing
  from (
    select r.run_id, r.step_slug, r.task_index, octet_length(r.output::text) as bytes,
      (select t.flow_slug from sluice.step_tasks t
        where t.run_id = r.run_id and t.step_slug = r.step_slug
          and t.task_index = r.task_index) as flow_slug
    from jsonb_to_recordset(v_results)
      as r(run_id uuid, step_slug text, task_index integer, output jsonb)
  ) x
  left join sluice.flows f on f.flow_slug = x.flow_slug
  where x.flow_slug is null or x.bytes > f.opt_max_output_bytes
  order by x.flow_slug is null desc
  limit 1;
  if found and v_missing.missing then
    raise exception 'Cannot complete task (run %, step "%", index %): no such task',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index
      using errcode = 'no_data_found';
  end if;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): the output is % bytes as JSON, more than the limit of % bytes (max_output_bytes)',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index, v_missing.bytes,
      v_missing.max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_output_bytes',
        'size', v_missing.bytes, 'max', v_missing.max_bytes)::text;
  end if;

  select array_agg(x.run_id), array_agg(x.step_slug) into v_run_ids, v_step_slugs
  from jsonb_to_recordset(v_results) as x(run_id uuid, step_slug text);

  -- The signal keys of the waits these results start, locked before any run: the first rung of
  -- the ladder (signal keys -> runs -> ...), as sluice.send_signal takes it.
  -- Most batches start no wait: the test is an expression, no statement.
  if jsonb_path_exists(v_results, '$[*].waits[*].key') then
    perform sluice.lock_signal_keys(array(
      select w.key
      from jsonb_to_recordset(v_results) as x(waits jsonb)
      cross join lateral jsonb_to_recordset(coalesce(x.waits, '[]'::jsonb)) as w(key text)
      where w.key is not null
    ));
  end if;

  for v_state in select * from sluice.lock_run_steps(v_run_ids, v_step_slugs, false) loop
    continue when v_state.status <> 'started';
    v_run := v_state.run_id;
    v_step := v_state.step_slug;

    -- Tasks are joined on their whole key, taken from the materialized batch: given
    -- "t.run_id = v_run and t.step_slug = v_step" (or an equal condition the planner derives
    -- through an inlined batch), the plan estimated from statistics in which a step has a task
    -- or two reads every task of the step and matches the indexes afterwards, a cost that grew
    -- with a wide map's width.
    with x as materialized (
      select distinct on (r.task_index) r.run_id, r.step_slug, r.task_index, r.attempt,
        r.worker_id, r.output
      from jsonb_to_recordset(v_results)
        as r(run_id uuid, step_slug text, task_index integer, attempt integer,
          worker_id uuid, output jsonb)
      where r.run_id = v_run and r.step_slug = v_step
      order by r.task_index
    ), done as (
      update sluice.step_tasks t
      set status = 'completed', completed_at = clock_timestamp(), output = x.output
      from x
      where t.run_id = x.run_id and t.step_slug = x.step_slug and t.task_index = x.task_index
        and t.status = 'started' and t.attempts_count = x.attempt
        and t.last_worker_id = x.worker_id
      returning t.queue_name, t.message_id,
        concat_ws('/', t.run_id, t.step_slug, t.task_index, t.attempts_count, t.last_worker_id)
          as fence
    )
    select count(*), array_agg(d.queue_name), array_agg(d.message_id), array_agg(d.fence)
    into v_n, v_queues, v_ids, v_keys
    from done d;

    continue when v_n = 0;
    v_applied := v_applied + v_n;

    -- What the live attempt computed for the wait steps that depend on this step (their key or
    -- due time), stored on them before they become ready below.
    perform sluice.store_wait_parameters(v_run, v_state.flow_slug, v_step, (
      select r.waits
      from jsonb_to_recordset(v_results)
        as r(run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid,
          waits jsonb)
      where r.run_id = v_run and r.step_slug = v_step
        and concat_ws('/', r.run_id, r.step_slug, r.task_index, r.attempt, r.worker_id)
          = any (v_keys)
      limit 1
    ));
    v_done_keys := v_done_keys || v_keys;
    v_archive_queues := v_archive_queues || v_queues;
    v_archive_ids := v_archive_ids || v_ids;

    -- v_state is locked, so its remaining_tasks is current. A completing step is updated once,
    -- by complete_step (which zeroes remaining_tasks); only a step that goes on needs the
    -- decrement.
    if v_state.remaining_tasks > v_n then
      update sluice.step_states ss set remaining_tasks = ss.remaining_tasks - v_n
      where ss.run_id = v_run and ss.step_slug = v_step;
    else
      select s.step_type into v_step_type
      from sluice.steps s where s.flow_slug = v_state.flow_slug and s.step_slug = v_step;
      perform sluice.complete_step(
        v_run, v_state.flow_slug, v_step,
        (
          select case
            when v_step_type = 'map' then jsonb_agg(t.output order by t.task_index)
            else (array_agg(t.output))[1]
          end
          from sluice.step_tasks t
          where t.run_id = v_run and t.step_slug = v_step
        )
      );
      if not (v_run = any (v_released)) then
        v_released := v_released || v_run;
      end if;
    end if;
  end loop;

  -- Only a completed step releases dependents or finishes the run; a map task that leaves
  -- siblings running changes neither. Each such run once, after all of its steps.
  foreach v_run in array v_released loop
    perform sluice.start_ready_steps(v_run);
  end loop;

  -- One archive call for the whole batch (per queue), not one per step: each call runs dynamic
  -- SQL that is parsed and planned anew.
  if cardinality(v_archive_ids) > 0 then
    perform sluice.archive_messages(v_archive_queues, v_archive_ids);
  end if;

  select jsonb_agg(jsonb_build_object('run_id', x.run_id, 'step_slug', x.step_slug,
      'task_index', x.task_index, 'attempt', x.attempt) order by x.ord)
  into v_stale
  from rows from (jsonb_to_recordset(complete_tasks.results)
    as (run_id uuid, step_slug text, task_index integer, attempt integer, worker_id uuid))
    with ordinality as x(run_id, step_slug, task_index, attempt, worker_id, ord)
  where not (concat_ws('/', x.run_id, x.step_slug, x.task_index, x.attempt, x.worker_id)
    = any (v_done_keys));

  -- The runs these results finished, with their durations: the worker records them as the
  -- sluice.run.duration metric. One probe per batch that completed a step; none otherwise.
  if cardinality(v_released) > 0 then
    select jsonb_agg(jsonb_build_object('run_id', r.run_id, 'flow_slug', r.flow_slug,
        'seconds', extract(epoch from r.completed_at - r.started_at)))
    into v_finished
    from sluice.runs r
    where r.run_id = any (v_released) and r.status = 'completed';
  end if;

  return jsonb_build_object('completed', v_applied, 'stale', coalesce(v_stale, '[]'::jsonb),
    'runs_completed', coalesce(v_finished, '[]'::jsonb));
end;
$_$;

-- As in migration 20261130000600, except that a claimed task's max_attempts is the number of the
-- last attempt of its current retry round (attempts_base + the effective max_attempts): a
-- handler still tells its last attempt by attempt = maxAttempts after a retry, while attempt
-- numbers keep counting up across rounds. Since migration 20261207001500 a claimed task also
-- carries its run's traceparent, its queued_at and its claimed_at (the attempt's span, the queue
-- wait metric).
CREATE OR REPLACE FUNCTION sluice.start_tasks(queue_name text, message_ids bigint[], worker_id uuid, supported jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_queue text := lower(start_tasks.queue_name);
  v_function text;
  v_flow text;
  v_bodies jsonb;
  v_hidden jsonb;
  v_fatal_ids bigint[];
  v_fatal_classes text[];
  v_fatal jsonb;
  v_fatal_text text;
  v_duplicate_ids bigint[];
  v_vis_ids bigint[];
  v_vis_secs integer[];
  v_updated integer;
  v_claim_ids bigint[];
  v_claim_count integer;
  v_tasks jsonb;
  v_claimed integer;
  v_archive bigint[];
  v_locked bigint[];
begin
  if jsonb_typeof(start_tasks.supported) is distinct from 'array' then
    raise exception 'Cannot start tasks on queue "%": supported must be a JSON array of {flow_slug, step_slug}, got %',
      v_queue, coalesce(jsonb_typeof(start_tasks.supported), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  select w.function_name, w.flow_slug into v_function, v_flow
  from sluice.workers w where w.worker_id = start_tasks.worker_id;
  if not found then
    raise exception 'Cannot start tasks on queue "%": worker % is not registered',
      v_queue, start_tasks.worker_id
      using errcode = 'no_data_found';
  end if;

  if sluice.worker_fenced(start_tasks.worker_id) then
    if coalesce(cardinality(start_tasks.message_ids), 0) > 0 then
      execute format(
        'update pgmq.%I q set vt = clock_timestamp() where q.msg_id = any ($1)',
        pgmq.format_table_name(v_queue, 'q')
      ) using start_tasks.message_ids;
    end if;
    return jsonb_build_object('outcome', 'fenced', 'flow_slug', v_flow, 'tasks', '[]'::jsonb,
      'duplicates', '[]'::jsonb, 'archived', '[]'::jsonb, 'fatal', '[]'::jsonb);
  end if;

  if coalesce(cardinality(start_tasks.message_ids), 0) = 0 then
    return jsonb_build_object('outcome', 'claimed', 'tasks', '[]'::jsonb,
      'duplicates', '[]'::jsonb, 'archived', '[]'::jsonb, 'fatal', '[]'::jsonb);
  end if;

  -- Skip locked: a holder of a task lock (completion, failure, recovery) may be waiting for a
  -- message this transaction read; waiting for it here would close a cycle.
  select array_agg(t.message_id) into v_locked
  from (
    select t.message_id
    from sluice.step_tasks t
    where t.queue_name = v_queue and t.message_id = any (start_tasks.message_ids)
    for update skip locked
  ) t;

  -- Bodies are read, not trusted: they only serve to detect a message that names another task.
  -- Each message's visibility (epoch seconds) tells whether the claim still needs to set it.
  execute format(
    'select coalesce(jsonb_object_agg(q.msg_id::text, q.message), ''{}''),
       coalesce(jsonb_object_agg(q.msg_id::text, extract(epoch from q.vt)), ''{}'')
     from pgmq.%I q where q.msg_id = any ($1)',
    pgmq.format_table_name(v_queue, 'q')
  ) into v_bodies, v_hidden using start_tasks.message_ids;

  -- One pass sorts the batch into its classes, each an array in batch order.
  select
    array_agg(c.message_id order by c.ord)
      filter (where c.class in ('missing', 'wrong_queue', 'unsupported')),
    array_agg(c.class order by c.ord)
      filter (where c.class in ('missing', 'wrong_queue', 'unsupported')),
    array_agg(c.message_id order by c.ord)
      filter (where c.class = 'duplicate' or (c.class = 'claim' and not c.hidden_enough)),
    array_agg(c.vt_seconds order by c.ord)
      filter (where c.class = 'duplicate' or (c.class = 'claim' and not c.hidden_enough)),
    array_agg(c.message_id order by c.ord) filter (where c.class = 'terminal'),
    array_agg(c.message_id order by c.ord) filter (where c.class in ('duplicate', 'busy')),
    array_agg(c.message_id order by c.ord) filter (where c.class = 'claim')
  into v_fatal_ids, v_fatal_classes, v_vis_ids, v_vis_secs, v_archive, v_duplicate_ids,
    v_claim_ids
  from (
    select i.message_id, i.ord, t.run_id, t.step_slug, t.task_index,
      case
        when t.run_id is null then
          case when exists (
            select 1 from sluice.step_tasks x
            where x.run_id = sluice.try_uuid(v_bodies -> i.message_id::text ->> 'run_id')
              and x.step_slug = v_bodies -> i.message_id::text ->> 'step_slug'
              and to_jsonb(x.task_index) = v_bodies -> i.message_id::text -> 'task_index'
          ) then 'wrong_queue' else 'missing' end
        when not (v_bodies ? i.message_id::text) then
          case when t.status in ('completed', 'failed', 'skipped', 'cancelled')
            then 'terminal' else 'missing' end
        when v_bodies -> i.message_id::text ->> 'run_id' is distinct from t.run_id::text
          or v_bodies -> i.message_id::text ->> 'step_slug' is distinct from t.step_slug
          or v_bodies -> i.message_id::text -> 'task_index' is distinct from to_jsonb(t.task_index)
          or v_bodies -> i.message_id::text ->> 'flow_slug' is distinct from t.flow_slug
          then 'wrong_queue'
        when not start_tasks.supported @> jsonb_build_array(
          jsonb_build_object('flow_slug', t.flow_slug, 'step_slug', t.step_slug)
        ) then 'unsupported'
        when not (t.message_id = any (coalesce(v_locked, '{}'))) then 'busy'
        when t.status = 'queued' then 'claim'
        when t.status = 'started' then 'duplicate'
        else 'terminal'
      end as class,
      case
        when t.status = 'queued' then coalesce(s.opt_timeout, f.opt_timeout) + 2
        when t.status = 'started' then greatest(1, ceil(extract(epoch from
          t.started_at + make_interval(secs =>
            coalesce(s.opt_timeout, f.opt_timeout) + sluice.stall_margin_seconds())
          - clock_timestamp())))::integer
      end as vt_seconds,
      -- A claim leaves the visibility its read set when that already hides the message for the
      -- claim's visibility (timeout + 2 s; up to 1 s of the margin went by since the read, in the
      -- same statement for the worker) and not past the attempt's stall deadline: a message that
      -- shows again before that deadline is only classified a duplicate and hidden until it. The
      -- update it saves is the second non-HOT update of the message row per task (issue 31).
      coalesce((v_hidden ->> i.message_id::text)::float8
        between extract(epoch from clock_timestamp()) + coalesce(s.opt_timeout, f.opt_timeout) + 1
          and extract(epoch from clock_timestamp()) + coalesce(s.opt_timeout, f.opt_timeout)
            + sluice.stall_margin_seconds(), false) as hidden_enough
    from unnest(start_tasks.message_ids) with ordinality as i(message_id, ord)
    left join sluice.step_tasks t on t.queue_name = v_queue and t.message_id = i.message_id
    left join sluice.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
    left join sluice.flows f on f.flow_slug = t.flow_slug
  ) c;

  if v_fatal_ids is not null then
    select jsonb_agg(jsonb_build_object('message_id', f.id::text, 'class', f.class) order by f.ord),
      string_agg(format('message %s (%s)', f.id, f.class), ', ' order by f.ord)
    into v_fatal, v_fatal_text
    from unnest(v_fatal_ids, v_fatal_classes) with ordinality as f(id, class, ord);

    execute format(
      'update pgmq.%I q set vt = clock_timestamp() where q.msg_id = any ($1)',
      pgmq.format_table_name(v_queue, 'q')
    ) using start_tasks.message_ids;

    update sluice.worker_functions wf
    set restart_paused_at = coalesce(wf.restart_paused_at, now()),
      pause_reason = coalesce(wf.pause_reason, format(
        'unsupported work on queue "%s" seen by worker %s: %s',
        v_queue, start_tasks.worker_id, v_fatal_text
      )),
      updated_at = now()
    where wf.function_name = v_function;

    return jsonb_build_object('outcome', 'fatal', 'tasks', '[]'::jsonb,
      'duplicates', '[]'::jsonb, 'archived', '[]'::jsonb, 'fatal', v_fatal);
  end if;

  v_claim_count := coalesce(cardinality(v_claim_ids), 0);

  with claimed as (
    update sluice.step_tasks t
    -- The claim's own time, not now(): in the worker's read_with_poll statement the transaction
    -- began with the long poll, possibly before the task was even queued.
    set status = 'started', attempts_count = t.attempts_count + 1, started_at = clock_timestamp(),
      last_worker_id = start_tasks.worker_id
    -- By message key, and without "t.status = 'queued'": every row was locked and classified as
    -- queued above, so it still is. Either a join on a table function (estimated at 100 rows)
    -- or that condition (which step_tasks_queued_idx answers, estimated from statistics taken at
    -- some quiet moment) leads the generic plan to read every task, or every queued one, per
    -- claim. An array of ids keeps it at one index probe per claimed message.
    where t.queue_name = v_queue and t.message_id = any (v_claim_ids)
    returning t.*
  )
  select count(*),
    coalesce(jsonb_agg(jsonb_build_object(
      'message_id', c.message_id::text,
      'flow_slug', c.flow_slug,
      'run_id', c.run_id,
      'step_slug', c.step_slug,
      'task_index', c.task_index,
      'attempt', c.attempts_count,
      'worker_id', c.last_worker_id,
      'timeout_seconds', coalesce(s.opt_timeout, f.opt_timeout),
      'max_attempts', c.attempts_base + coalesce(s.opt_max_attempts, f.opt_max_attempts),
      'input', case
        when s.step_type = 'map' then c.input
        when s.deps_count = 0 then r.input
        else sluice.dependency_outputs(c.run_id, c.flow_slug, c.step_slug)
      end,
      'flow_input', r.input,
      'traceparent', r.traceparent,
      -- The error that ended the previous attempt (a failure or a stall), for the attempt's trace.
      'previous_error', case when c.attempts_count - c.attempts_base > 1 then c.error_message end,
      'queued_at', sluice.iso_instant(c.queued_at),
      'claimed_at', sluice.iso_instant(c.started_at)
    ) order by array_position(start_tasks.message_ids, c.message_id)), '[]'::jsonb)
  into v_claimed, v_tasks
  from claimed c
  join sluice.runs r on r.run_id = c.run_id
  join sluice.steps s on s.flow_slug = c.flow_slug and s.step_slug = c.step_slug
  join sluice.flows f on f.flow_slug = c.flow_slug;

  if v_claimed <> v_claim_count then
    raise exception 'Cannot claim on queue "%": % of % queued tasks changed state during the claim',
      v_queue, v_claim_count - v_claimed, v_claim_count;
  end if;

  -- Visibility is applied and verified before any handler can run: a message left visible
  -- would be read again during the attempt. A shortfall raises, rolling back the attempt
  -- increments above. Claims whose read hid the message long enough need none (hidden_enough).
  if v_vis_ids is not null then
    execute format(
      'update pgmq.%I q set vt = clock_timestamp() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::integer[]) as v(id, secs)
       where q.msg_id = v.id',
      pgmq.format_table_name(v_queue, 'q')
    ) using v_vis_ids, v_vis_secs;
    get diagnostics v_updated = row_count;
    if v_updated <> cardinality(v_vis_ids) then
      raise exception 'Cannot claim on queue "%": visibility was applied to % of % messages (ids %)',
        v_queue, v_updated, cardinality(v_vis_ids), v_vis_ids;
    end if;
  end if;

  if v_archive is not null then
    perform pgmq.archive(v_queue, v_archive);
  end if;

  return jsonb_build_object(
    'outcome', 'claimed',
    'tasks', v_tasks,
    'duplicates', coalesce(to_jsonb(array(select d::text from unnest(v_duplicate_ids) d)), '[]'::jsonb),
    'archived', coalesce(to_jsonb(array(select a::text from unnest(v_archive) a)), '[]'::jsonb),
    'fatal', '[]'::jsonb
  );
end;
$_$;
