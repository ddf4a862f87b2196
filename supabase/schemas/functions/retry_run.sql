-- sluice.retry_run, as the migrations create it (last defined in supabase/migrations/20261208002943_sluice_merge_flow_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
