-- sluice.complete_tasks / sluice.complete_task: a worker reports handler outputs.
--
-- Reports are fenced: each result carries the token its claim handed out (attempt, worker_id)
-- and is applied only while that attempt is the task's live one (the task is 'started' with
-- that attempts_count and last_worker_id). Any other result is stale (the task was requeued,
-- claimed again, skipped, cancelled or already completed): it changes nothing, neither the task
-- nor its message, and is returned so the worker can say so. So is every result of a fenced
-- worker (sluice.worker_fenced: its flow was compiled again since it registered), whose task is
-- usually gone with the old definition. Any other result naming no task at all is an error and
-- nothing of the batch is written.
--
-- Lock order: the batch's started runs (ordered by run_id, so two batched completers cannot
-- deadlock) -> their reported step states (ordered by run and slug), both through
-- sluice.lock_run_steps -> the live tasks -> their messages; the global order of
-- 20261130000200_sluice_runtime_tables.sql. Stale results lock no task.

create function sluice.complete_tasks(results jsonb)
returns jsonb
language plpgsql
as $$
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

  select x.run_id, x.step_slug, x.task_index into v_missing
  from jsonb_to_recordset(v_results) as x(run_id uuid, step_slug text, task_index integer)
  where not exists (
    select 1 from sluice.step_tasks t
    where t.run_id = x.run_id and t.step_slug = x.step_slug and t.task_index = x.task_index
  )
  limit 1;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): no such task',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index
      using errcode = 'no_data_found';
  end if;

  -- The output size limit of each result's flow, before anything is written.
  select x.run_id, x.step_slug, x.task_index, octet_length(x.output::text) as bytes,
    f.opt_max_output_bytes as max_bytes
  into v_missing
  from jsonb_to_recordset(v_results)
    as x(run_id uuid, step_slug text, task_index integer, output jsonb)
  join sluice.runs r on r.run_id = x.run_id
  join sluice.flows f on f.flow_slug = r.flow_slug
  where octet_length(x.output::text) > f.opt_max_output_bytes
  limit 1;
  if found then
    raise exception 'Cannot complete task (run %, step "%", index %): the output is % bytes as JSON, more than the limit of % bytes (max_output_bytes)',
      v_missing.run_id, v_missing.step_slug, v_missing.task_index, v_missing.bytes,
      v_missing.max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_output_bytes',
        'size', v_missing.bytes, 'max', v_missing.max_bytes)::text;
  end if;

  select array_agg(x.run_id), array_agg(x.step_slug) into v_run_ids, v_step_slugs
  from jsonb_to_recordset(v_results) as x(run_id uuid, step_slug text);

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

  return jsonb_build_object('completed', v_applied, 'stale', coalesce(v_stale, '[]'::jsonb));
end;
$$;

create function sluice.complete_task(
  run_id uuid,
  step_slug text,
  task_index integer,
  attempt integer,
  worker_id uuid,
  output jsonb
)
returns text
language plpgsql
as $$
begin
  -- PL/pgSQL, not SQL, so that the call is not parsed and planned again every time.
  return case when (sluice.complete_tasks(jsonb_build_array(jsonb_build_object(
    'run_id', complete_task.run_id,
    'step_slug', complete_task.step_slug,
    'task_index', complete_task.task_index,
    'attempt', complete_task.attempt,
    'worker_id', complete_task.worker_id,
    'output', complete_task.output
  ))) ->> 'completed')::integer = 1 then 'completed' else 'stale' end;
end;
$$;
