-- sluice.start_ready_steps, as the migrations create it (last defined in supabase/migrations/20261208002943_sluice_merge_flow_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
