-- Internal transitions of a run: starting ready steps, completing, skipping and failing steps,
-- exhausting a task, finishing the run. Every function here that writes expects its caller to
-- hold the run row lock (taken by sluice.lock_run_steps, lock order runs -> step_states ->
-- step_tasks -> PGMQ message rows) and maintains the invariant that a completed or failed run,
-- or a skipped step, leaves no task queued or started and no live message.

-- Workers LISTEN on this channel; the payload is the queue name. Postgres folds identical
-- notifications of one transaction into one, so a transaction that sends many messages to a
-- queue wakes its workers once.
create function sluice.notify_queue(queue_name text)
returns void
language sql
as $$ select pg_notify('sluice_queue_ready', notify_queue.queue_name) $$;

-- Archives messages on the queues they live on: queue_names[i] holds message_ids[i].
create function sluice.archive_messages(queue_names text[], message_ids bigint[])
returns void
language plpgsql
as $$
declare
  v_queue text;
begin
  -- Nearly always every message lives on one queue: archive them in one call.
  if queue_names[1] = all (queue_names) then
    perform pgmq.archive(queue_names[1], array_remove(message_ids, null));
    return;
  end if;
  for v_queue in select distinct q from unnest(queue_names) as q where q is not null loop
    perform pgmq.archive(
      v_queue,
      array(
        select m.id from unnest(queue_names, message_ids) as m(q, id)
        where m.q = v_queue and m.id is not null
      )
    );
  end loop;
end;
$$;

-- Moves the queued and started tasks of the given steps (all steps when step_slugs is null) to
-- 'skipped' or 'cancelled' and archives their messages on each task's own queue.
create function sluice.terminate_tasks(run_id uuid, step_slugs text[], new_status text)
returns void
language plpgsql
as $$
declare
  v_queues text[];
  v_ids bigint[];
begin
  with terminated as (
    update sluice.step_tasks t
    set status = new_status,
      skipped_at = case when new_status = 'skipped' then now() end,
      cancelled_at = case when new_status = 'cancelled' then now() end
    where t.run_id = terminate_tasks.run_id
      and (step_slugs is null or t.step_slug = any (step_slugs))
      and t.status in ('queued', 'started')
    returning t.queue_name, t.message_id
  )
  select array_agg(queue_name), array_agg(message_id) into v_queues, v_ids from terminated;
  if v_ids is not null then
    perform sluice.archive_messages(v_queues, v_ids);
  end if;
end;
$$;

-- Marks a step completed with its aggregated output and releases its dependents.
create function sluice.complete_step(run_id uuid, flow_slug text, step_slug text, output jsonb)
returns void
language plpgsql
as $$
declare
  v_map_step text;
begin
  -- A map step over this step's output cannot start from anything but an array: refuse the
  -- completion (the caller's transaction rolls back) rather than strand the dependent.
  select s.step_slug into v_map_step
  from sluice.steps s
  where s.flow_slug = complete_step.flow_slug
    and s.map_source = complete_step.step_slug
    and jsonb_typeof(complete_step.output) is distinct from 'array'
  limit 1;
  if found then
    raise exception 'Cannot complete step "%" of run %: map step "%" maps over its output, which must be an array, got %',
      complete_step.step_slug, complete_step.run_id, v_map_step,
      coalesce(jsonb_typeof(complete_step.output), 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  update sluice.step_states ss
  set status = 'completed', completed_at = now(), output = complete_step.output,
    remaining_tasks = 0
  where ss.run_id = complete_step.run_id and ss.step_slug = complete_step.step_slug;

  update sluice.step_states ss
  set remaining_deps = ss.remaining_deps - 1
  from sluice.deps d
  where d.flow_slug = complete_step.flow_slug
    and d.dep_slug = complete_step.step_slug
    and ss.run_id = complete_step.run_id
    and ss.step_slug = d.step_slug
    and ss.status = 'created';

  update sluice.runs r set remaining_steps = r.remaining_steps - 1
  where r.run_id = complete_step.run_id;
end;
$$;

-- Skips a step (and, with cascade, every transitive dependent): their tasks become 'skipped'
-- with messages archived, and dependents outside the skipped set lose one pending dependency
-- per skipped dependency (a skipped dependency is absent from their input).
create function sluice.skip_steps(
  run_id uuid,
  flow_slug text,
  step_slug text,
  skip_reason text,
  cascade_dependents boolean
)
returns void
language plpgsql
as $$
declare
  v_skipped text[];
begin
  with recursive targets as (
    select skip_steps.step_slug as slug
    union
    select d.step_slug
    from sluice.deps d
    join targets t on d.dep_slug = t.slug
    where cascade_dependents and d.flow_slug = skip_steps.flow_slug
  ),
  skipped as (
    update sluice.step_states ss
    set status = 'skipped', skipped_at = now(),
      skip_reason = case
        when ss.step_slug = skip_steps.step_slug then skip_steps.skip_reason
        else 'dependency_skipped'
      end
    where ss.run_id = skip_steps.run_id
      and ss.step_slug in (select slug from targets)
      and ss.status in ('created', 'started')
    returning ss.step_slug
  )
  select array_agg(s.step_slug) into v_skipped from skipped s;

  if v_skipped is null then
    return;
  end if;

  perform sluice.terminate_tasks(skip_steps.run_id, v_skipped, 'skipped');

  update sluice.step_states ss
  set remaining_deps = ss.remaining_deps - released.n
  from (
    select d.step_slug, count(*)::integer as n
    from sluice.deps d
    where d.flow_slug = skip_steps.flow_slug
      and d.dep_slug = any (v_skipped)
      and not (d.step_slug = any (v_skipped))
    group by d.step_slug
  ) released
  where ss.run_id = skip_steps.run_id
    and ss.step_slug = released.step_slug
    and ss.status = 'created';

  update sluice.runs r set remaining_steps = r.remaining_steps - cardinality(v_skipped)
  where r.run_id = skip_steps.run_id;
end;
$$;

-- Fails the run because of one step: that step is 'failed', every other unfinished step and
-- every queued or started task is 'cancelled', and their messages are archived.
create function sluice.fail_run(run_id uuid, step_slug text, error_message text)
returns void
language plpgsql
as $$
begin
  update sluice.runs r
  set status = 'failed', failed_at = now(), error_message = fail_run.error_message
  where r.run_id = fail_run.run_id and r.status = 'started';

  update sluice.step_states ss
  set status = case when ss.step_slug = fail_run.step_slug then 'failed' else 'cancelled' end,
    failed_at = case when ss.step_slug = fail_run.step_slug then now() end,
    cancelled_at = case when ss.step_slug = fail_run.step_slug then null else now() end,
    error_message = case
      when ss.step_slug = fail_run.step_slug then fail_run.error_message
      else ss.error_message
    end
  where ss.run_id = fail_run.run_id and ss.status in ('created', 'started');

  perform sluice.terminate_tasks(fail_run.run_id, null, 'cancelled');
end;
$$;

-- Completes the run once no step is pending. Run output = outputs of the completed leaf steps
-- (steps nothing depends on), keyed by step slug.
--
-- PL/pgSQL, not SQL: a SQL function's body is parsed and planned again on every call, which made
-- this, run after every completion, the most expensive statement of the hot path. PL/pgSQL keeps
-- the plan for the session.
create function sluice.finish_run_if_done(run_id uuid)
returns void
language plpgsql
as $$
begin
  update sluice.runs r
  set status = 'completed', completed_at = now(),
    output = (
      select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
      from sluice.step_states ss
      where ss.run_id = r.run_id
        and ss.status = 'completed'
        and not exists (
          select 1 from sluice.deps d
          where d.flow_slug = r.flow_slug and d.dep_slug = ss.step_slug
        )
    )
  where r.run_id = finish_run_if_done.run_id
    and r.status = 'started'
    and r.remaining_steps = 0;
end;
$$;

-- The input of a step with dependencies: the outputs of its completed dependencies, keyed by
-- their slugs (a skipped dependency is absent). Read when the step starts (its condition is
-- tested against it) and again when each of its tasks is claimed.
--
-- PL/pgSQL, not SQL: the claim calls it once per claimed task, and a SQL function with a
-- subquery is not inlined, so it would be planned again on every claim.
create function sluice.dependency_outputs(run_id uuid, flow_slug text, step_slug text)
returns jsonb
language plpgsql
stable
as $$
begin
  return (
    select coalesce(jsonb_object_agg(d.dep_slug, ds.output), '{}'::jsonb)
    from sluice.deps d
    join sluice.step_states ds
      on ds.run_id = dependency_outputs.run_id and ds.step_slug = d.dep_slug
    where d.flow_slug = dependency_outputs.flow_slug
      and d.step_slug = dependency_outputs.step_slug
      and ds.status = 'completed'
  );
end;
$$;

-- Starts every step whose dependencies are resolved, repeating until nothing changes: a step
-- whose condition is unmet is skipped or fails the run, an empty map completes at once with []
-- (which may release further steps in the same transaction), any other step gets its tasks and
-- their messages on the step's queue.
create function sluice.start_ready_steps(run_id uuid)
returns void
language plpgsql
as $$
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
    insert into sluice.step_tasks (
      run_id, step_slug, task_index, flow_slug, queue_name, message_id, input
    )
    select start_ready_steps.run_id, v_step.step_slug, (m.ord - 1)::integer, v_step.flow_slug,
      v_step.queue_name, m.id, e.value
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

-- A task ran out of attempts (or stalled too often): it fails, its message is archived, and the
-- step's when_exhausted decides between failing the run and skipping the step.
create function sluice.exhaust_task(
  run_id uuid,
  step_slug text,
  task_index integer,
  error_message text
)
returns void
language plpgsql
as $$
declare
  v_task sluice.step_tasks;
  v_when text;
begin
  update sluice.step_tasks t
  set status = 'failed', failed_at = now(), error_message = exhaust_task.error_message
  where t.run_id = exhaust_task.run_id
    and t.step_slug = exhaust_task.step_slug
    and t.task_index = exhaust_task.task_index
  returning t.* into v_task;

  perform sluice.archive_messages(array[v_task.queue_name], array[v_task.message_id]);

  select s.when_exhausted into v_when
  from sluice.steps s
  where s.flow_slug = v_task.flow_slug and s.step_slug = v_task.step_slug;

  if v_when = 'fail' then
    perform sluice.fail_run(
      exhaust_task.run_id, exhaust_task.step_slug,
      format('step "%s" task %s failed: %s', exhaust_task.step_slug, exhaust_task.task_index,
        exhaust_task.error_message)
    );
  else
    update sluice.step_states ss set error_message = exhaust_task.error_message
    where ss.run_id = exhaust_task.run_id and ss.step_slug = exhaust_task.step_slug;
    perform sluice.skip_steps(
      exhaust_task.run_id, v_task.flow_slug, exhaust_task.step_slug, 'retries_exhausted',
      v_when = 'skip-cascade'
    );
    perform sluice.start_ready_steps(exhaust_task.run_id);
  end if;
end;
$$;
