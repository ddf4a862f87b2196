-- Priorities (issue 46, docs/flow_control.md#priorities): a run's priority, given at its start
-- (`{"priority": n}`, a whole number from -1000 to 1000, 0 by default), orders its ready tasks
-- within their queue: a worker's read takes visible messages of higher-priority tasks first, of
-- equal priority in PGMQ's order (msg_id: first queued, first read).
--
-- PGMQ reads by msg_id only, and the real extension is not sluice's to change: so the worker's
-- reads (sluice.read_messages, sluice.read_messages_with_poll) now go through
-- sluice.read_prioritized, which picks the messages itself, from the queue table through
-- pgmq.format_table_name as start_tasks already does, and sets their visibility and read count
-- exactly as pgmq.read does. A task carries its run's priority (step_tasks.priority, copied by
-- start_ready_steps) and a partial index holds only the queued tasks of priority <> 0: a queue with
-- none costs one probe of that (empty) index per read, then PGMQ's own read as before.
--
-- Routines redefined: start_ready_steps (tasks take their run's priority), check_start_options
-- (accepts `priority`), start_with_options (applies it), start_due_debounced (a debounced run's
-- priority), read_messages and read_messages_with_poll (read by priority). New:
-- check_priority_option, max_priority, apply_run_priority, read_prioritized.

alter table sluice.runs add column priority integer not null default 0
  constraint runs_priority_check check (priority between -1000 and 1000);

comment on column sluice.runs.priority is
  'The run''s priority (higher first within a queue; 0 by default), copied to its tasks.';

alter table sluice.step_tasks add column priority integer not null default 0;

comment on column sluice.step_tasks.priority is
  'Its run''s priority: a worker reads the queued tasks of higher priority first (sluice.read_prioritized).';

-- Only prioritized queued tasks: empty (and never written) while nobody uses priorities. The
-- first serves the reads of prioritized tasks in priority order, the second the read of the
-- default ones, which passes over the prioritized (sluice.read_prioritized).
create index step_tasks_prioritized_idx on sluice.step_tasks (queue_name, priority desc, message_id)
  where status = 'queued' and priority <> 0;
create index step_tasks_prioritized_message_idx on sluice.step_tasks (message_id)
  where status = 'queued' and priority <> 0;

alter table sluice.debounced_starts add column priority integer not null default 0;

comment on column sluice.debounced_starts.priority is
  'The priority of the last start that joined this pending start: its run''s.';

-- The highest priority; the lowest is its negative.
create function sluice.max_priority()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 1000 $$;

-- Validates the `priority` start option, naming the offending value: a whole number from
-- -max_priority() to max_priority().
create function sluice.check_priority_option(flow_ref text, priority jsonb)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if jsonb_typeof(check_priority_option.priority) is distinct from 'number'
    or (check_priority_option.priority #>> '{}')::numeric
      <> trunc((check_priority_option.priority #>> '{}')::numeric)
    or abs((check_priority_option.priority #>> '{}')::numeric) > sluice.max_priority()
  then
    raise exception 'Cannot start flow "%": priority must be a whole number from % to %, got %',
      check_priority_option.flow_ref, -sluice.max_priority(), sluice.max_priority(),
      coalesce(left(check_priority_option.priority::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Gives the run just created by this transaction its priority, and its tasks already queued (the
-- root steps': create_run queued them before the run had one). Priority 0 writes nothing.
create function sluice.apply_run_priority(run_id uuid, priority integer)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(apply_run_priority.priority, 0) = 0 then
    return;
  end if;
  update sluice.runs r set priority = apply_run_priority.priority
  where r.run_id = apply_run_priority.run_id;
  update sluice.step_tasks t set priority = apply_run_priority.priority
  where t.run_id = apply_run_priority.run_id and t.status = 'queued';
end;
$$;

-- Reads up to qty visible messages of the queue as pgmq.read does (the same rows' vt set to
-- clock_timestamp() + vt seconds, read_ct + 1, skipping rows other readers hold), but in priority
-- order: the messages of queued tasks of priority > 0 by (priority desc, msg_id), then those of
-- priority 0 (and messages of no queued task) by msg_id, then those of priority < 0 by
-- (priority desc, msg_id). With no queued task of priority <> 0 on the queue it is pgmq.read.
-- Cost with priorities queued: the first step reads every prioritized queued task of the queue
-- (the partial index) and sorts them; the second probes that index once per message it passes.
create function sluice.read_prioritized(queue_name text, vt integer, qty integer)
returns setof pgmq.message_record
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_queue text := lower(read_prioritized.queue_name);
  v_table text;
  v_ids bigint[];
  v_more bigint[];
begin
  if not exists (
    select 1 from sluice.step_tasks t
    where t.queue_name = v_queue and t.status = 'queued' and t.priority <> 0
  ) then
    return query select * from pgmq.read(read_prioritized.queue_name, read_prioritized.vt,
      read_prioritized.qty);
    return;
  end if;
  v_table := pgmq.format_table_name(read_prioritized.queue_name, 'q');
  -- Higher than the default first.
  execute format(
    'select coalesce(array_agg(x.msg_id), ''{}'') from (
       select m.msg_id from sluice.step_tasks t join pgmq.%I m on m.msg_id = t.message_id
       where t.queue_name = $1 and t.status = ''queued'' and t.priority > 0
         and m.vt <= clock_timestamp()
       order by t.priority desc, t.message_id
       limit $2
       for update of m skip locked) x',
    v_table
  ) into v_ids using v_queue, read_prioritized.qty;
  -- Then the default, in PGMQ's order: every visible message but a prioritized task's.
  if cardinality(v_ids) < read_prioritized.qty then
    execute format(
      'select coalesce(array_agg(x.msg_id), ''{}'') from (
         select m.msg_id from pgmq.%I m
         where m.vt <= clock_timestamp()
           and not exists (
             select 1 from sluice.step_tasks t
             where t.queue_name = $1 and t.message_id = m.msg_id and t.status = ''queued''
               and t.priority <> 0)
         order by m.msg_id
         limit $2
         for update skip locked) x',
      v_table
    ) into v_more using v_queue, read_prioritized.qty - cardinality(v_ids);
    v_ids := v_ids || v_more;
  end if;
  -- Then lower than the default.
  if cardinality(v_ids) < read_prioritized.qty then
    execute format(
      'select coalesce(array_agg(x.msg_id), ''{}'') from (
         select m.msg_id from sluice.step_tasks t join pgmq.%I m on m.msg_id = t.message_id
         where t.queue_name = $1 and t.status = ''queued'' and t.priority < 0
           and m.vt <= clock_timestamp()
         order by t.priority desc, t.message_id
         limit $2
         for update of m skip locked) x',
      v_table
    ) into v_more using v_queue, read_prioritized.qty - cardinality(v_ids);
    v_ids := v_ids || v_more;
  end if;
  return query execute format(
    'update pgmq.%I m
     set vt = clock_timestamp() + make_interval(secs => $2), read_ct = m.read_ct + 1
     where m.msg_id = any ($1)
     returning m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers',
    v_table
  ) using v_ids, read_prioritized.vt;
end;
$$;

-- The worker's reads. PGMQ's own pgmq.read and pgmq.read_with_poll carry no pinned path, and the
-- real extension is not sluice's to alter: called straight from a worker's session they ran with
-- its path, where public.format(text, jsonb, text, interval) outmatches pg_catalog's variadic
-- format inside pgmq.read. Called through these, they run with the pin like everything else.
-- Since migration 20261207234000 they read in priority order (sluice.read_prioritized).
create or replace function sluice.read_messages(queue_name text, vt integer, qty integer)
returns setof pgmq.message_record
language sql
set search_path = pg_catalog, pg_temp
as $$
  select * from sluice.read_prioritized(read_messages.queue_name, read_messages.vt,
    read_messages.qty)
$$;

-- pgmq.read_with_poll's loop around sluice.read_prioritized: reads until it returns messages or
-- max_poll_seconds are up, sleeping poll_interval_ms between empty reads; each read is its own
-- statement, so it sees messages committed since the previous one.
create or replace function sluice.read_messages_with_poll(
  queue_name text,
  vt integer,
  qty integer,
  max_poll_seconds integer,
  poll_interval_ms integer
)
returns setof pgmq.message_record
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_stop_at timestamptz := clock_timestamp()
    + make_interval(secs => read_messages_with_poll.max_poll_seconds);
begin
  loop
    return query select * from sluice.read_prioritized(read_messages_with_poll.queue_name,
      read_messages_with_poll.vt, read_messages_with_poll.qty);
    if found or clock_timestamp() >= v_stop_at then
      return;
    end if;
    perform pg_sleep(read_messages_with_poll.poll_interval_ms / 1000.0);
  end loop;
end;
$$;

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only. As in migration 20261207001300, and
-- `debounce` (check_debounce_option), which takes neither an idempotency key nor a run id, and
-- `priority` (check_priority_option).
CREATE OR REPLACE FUNCTION sluice.check_start_options(flow_ref text, options jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_unknown text;
  v_key jsonb := check_start_options.options -> 'idempotency_key';
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
  where k not in ('idempotency_key', 'debounce', 'priority')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: idempotency_key, debounce, priority';
  end if;
  if v_key is not null and jsonb_typeof(v_key) <> 'null' and (jsonb_typeof(v_key) <> 'string'
      or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": idempotency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(), left(v_key::text, 80)
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
  end if;
end;
$$;

-- Creates a run of the concrete flow `flow_slug`, started as `started_via`, honouring the start
-- options. As in migration 20261207232000, except that a new run (or a pending debounced start)
-- gets the start's `priority` (apply_run_priority).
CREATE OR REPLACE FUNCTION sluice.start_with_options(flow_slug text, started_via text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text := start_with_options.options ->> 'idempotency_key';
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
  if v_key is null then
    v_run := sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, start_with_options.run_id);
    perform sluice.apply_run_priority(v_run, v_priority);
    return v_run;
  end if;

  v_run := coalesce(start_with_options.run_id, gen_random_uuid());
  insert into sluice.idempotency_keys (flow_ref, idempotency_key, run_id)
  values (start_with_options.started_via, v_key, v_run)
  on conflict do nothing;
  if found then
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

-- The sweep of due debounced starts (the worker's heartbeat calls it every beat, like
-- release_due_waits): takes up to batch_size due rows (skip locked: a start holding one is
-- extending it), and for each deletes it and creates its run with its last input and run id, as
-- the name it was started by resolves now (an alias: the flow it points at when the run starts).
-- A start whose run cannot be created (its flow or alias was deleted) keeps its row with the
-- error and is not retried; the others go on. Returns how many runs it created.
-- As in migration 20261207232000, except that the run gets the pending start's priority.
CREATE OR REPLACE FUNCTION sluice.start_due_debounced(batch_size integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_flow text;
  v_started integer := 0;
begin
  if start_due_debounced.batch_size is null or start_due_debounced.batch_size < 1
    or start_due_debounced.batch_size > 10000
  then
    raise exception 'Cannot start due debounced starts: batch_size must be an integer from 1 to 10000, got %',
      coalesce(start_due_debounced.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  for v_row in
    select d.*
    from sluice.debounced_starts d
    where d.error_message is null and d.due_at <= clock_timestamp()
    order by d.due_at
    limit start_due_debounced.batch_size
    for update skip locked
  loop
    begin
      delete from sluice.debounced_starts d
      where d.flow_ref = v_row.flow_ref and d.debounce_key = v_row.debounce_key;
      -- Started through an alias: the flow it names now; a concrete start: that flow.
      v_flow := v_row.flow_slug;
      if v_row.flow_ref <> v_row.flow_slug then
        select a.flow_slug into v_flow from sluice.aliases a where a.alias = v_row.flow_ref;
      end if;
      if v_flow is null or not exists (select 1 from sluice.flows f where f.flow_slug = v_flow)
      then
        raise exception 'Cannot start flow "%": no flow or alias has that name', v_row.flow_ref
          using errcode = 'no_data_found';
      end if;
      perform set_config('sluice.traceparent', coalesce(v_row.traceparent, ''), true);
      perform sluice.create_run(v_flow, v_row.flow_ref, v_row.input, v_row.run_id);
      perform sluice.apply_run_priority(v_row.run_id, v_row.priority);
      v_started := v_started + 1;
    exception when others then
      -- The block's writes rolled back (the row is back); record why, for waitForRun and ops.
      update sluice.debounced_starts d
      set error_message = left(sqlerrm, 1000)
      where d.flow_ref = v_row.flow_ref and d.debounce_key = v_row.debounce_key;
    end;
  end loop;
  perform set_config('sluice.traceparent', '', true);
  return v_started;
end;
$$;

-- As in migration 20261207002000, except that a task takes its run's priority.
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

    -- A map task gets its element now, in one pass over the array: a claim that read it from the
    -- array would detoast the whole array for every task, a cost that grows with the map's width.
    -- A task takes its run's priority (docs/flow_control.md#priorities), read once per step.
    insert into sluice.step_tasks (
      run_id, step_slug, task_index, flow_slug, queue_name, message_id, input, priority
    )
    select start_ready_steps.run_id, v_step.step_slug, (m.ord - 1)::integer, v_step.flow_slug,
      v_step.queue_name, m.id, e.value,
      (select r.priority from sluice.runs r where r.run_id = start_ready_steps.run_id)
    from unnest(v_ids) with ordinality as m(id, ord)
    left join jsonb_array_elements(
      case when v_step.step_type = 'map' then v_source end
    ) with ordinality as e(value, ord) on e.ord = m.ord;

    update sluice.step_states ss
    set status = 'started', started_at = now(), initial_tasks = v_count, remaining_tasks = v_count
    where ss.run_id = start_ready_steps.run_id and ss.step_slug = v_step.step_slug;

    if v_delay = 0 then
      perform sluice.notify_queue(v_step.queue_name);
    end if;
  end loop;

  perform sluice.finish_run_if_done(start_ready_steps.run_id);
end;
$$;

revoke all on all routines in schema sluice from public;
