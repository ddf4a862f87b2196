-- sluice.complete_tasks, as the migrations create it (last defined in supabase/migrations/20261207133532_sluice_attempt_telemetry.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
