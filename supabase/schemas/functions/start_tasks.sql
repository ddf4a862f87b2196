-- sluice.start_tasks, as the migrations create it (last defined in supabase/migrations/20261207133532_sluice_attempt_telemetry.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
