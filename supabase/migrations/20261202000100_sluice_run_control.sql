-- Run control (docs/operations.md): cancelling runs (sluice.cancel_run, sluice.cancel_runs) and
-- retrying a failed or cancelled run from where it stopped (sluice.retry_run), and the worker's
-- heartbeat that tells it which of its running attempts are no longer live (so it aborts their
-- handlers' AbortSignal).
--
-- Lock order: the one ladder of 20261130000200_sluice_runtime_tables.sql, runs (for update,
-- ordered by run_id) -> step_states -> step_tasks -> PGMQ message rows. A cancel is a run
-- transition like sluice.fail_run: it locks the run rows first (several runs in run_id order, as
-- sluice.lock_run_steps does), then changes their step states, then their queued and started
-- tasks, and archives those tasks' messages last. A retry locks its run, then its step states in
-- slug order, then the tasks it gives another go, then sends their new messages and deletes the
-- old ones' archived copies. Neither waits for a lock earlier in the ladder than one it holds, so
-- neither deadlocks with completions, failures, recovery or claims (a claim that holds a message
-- skips a task lock it cannot get, so it never waits for a cancel).
--
-- Invariants kept:
--   - Fencing tokens never repeat: nothing here resets attempts_count or last_worker_id. A retry
--     requeues a task with the attempt count it had; its next claim takes the next number, so a
--     late report of any earlier attempt is stale. The attempt cap applies per retry round:
--     step_tasks.attempts_base records the attempts used before the current round, and
--     fail_task, stalled recovery and the claim's max_attempts count from it.
--   - A run that is completed, failed or cancelled has no task queued or started and no live
--     message (a cancel terminates every such task and archives its message).
--   - A retry only ever uses the concrete flow the run started on: its steps, and each task's
--     stored queue_name.

alter table sluice.runs
  drop constraint runs_status_check,
  add constraint runs_status_check
    check (status in ('started', 'completed', 'failed', 'cancelled')),
  add column cancelled_at timestamptz,
  add column cancel_reason text,
  add column cancelled_by text,
  -- How often the run was retried (sluice.retry_run), when last and by which database role.
  add column retry_count integer not null default 0 check (retry_count >= 0),
  add column retried_at timestamptz,
  add column retried_by text,
  add constraint runs_cancelled_check check ((status = 'cancelled') = (cancelled_at is not null)),
  add constraint runs_finished_once_check
    check (num_nonnulls(completed_at, failed_at, cancelled_at) <= 1),
  add constraint runs_retried_check check ((retry_count > 0) = (retried_at is not null));

comment on column sluice.runs.retried_by is
  'The database role (current_user) that called sluice.retry_run last.';
comment on column sluice.runs.cancelled_by is
  'The database role (current_user) that cancelled the run.';

-- Attempts used before the current retry round: a retry sets it to attempts_count, so the task
-- gets max_attempts more while its attempt numbers (the fencing tokens) keep counting up.
alter table sluice.step_tasks
  add column attempts_base integer not null default 0,
  add constraint step_tasks_attempts_base_check
    check (attempts_base >= 0 and attempts_base <= attempts_count);

-- Pruning finds finished runs by when they finished; a cancelled run finished at cancelled_at.
drop index sluice.runs_finished_idx;
create index runs_finished_idx on sluice.runs (coalesce(completed_at, failed_at, cancelled_at))
  where status <> 'started';

-- A task's flow and queue never change; its message changes only when a retry gives a finished
-- task (failed, cancelled) a fresh attempt: the old message was archived when the task ended,
-- and the new one is sent to the same stored queue.
create or replace function sluice.reject_task_identity_change()
returns trigger
language plpgsql
as $$
begin
  if new.flow_slug is distinct from old.flow_slug
    or new.queue_name is distinct from old.queue_name
    or (old.message_id is not null and new.message_id is distinct from old.message_id
      and not (old.status in ('failed', 'cancelled') and new.status = 'queued'
        and new.message_id is not null))
  then
    raise exception 'Cannot change the identity of task (%, %, %): flow_slug, queue_name and message_id are immutable',
      old.run_id, old.step_slug, old.task_index
      using errcode = 'integrity_constraint_violation';
  end if;
  return new;
end;
$$;

-- Events (docs/events.md): run:cancelled ends a run like run:completed and run:failed;
-- run:retried says a failed or cancelled run goes on.
create or replace function sluice.run_event(r sluice.runs, status text)
returns jsonb
language plpgsql
stable
as $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'run:started', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'at', r.started_at)
    when 'completed' then jsonb_build_object('type', 'run:completed', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'output', r.output, 'at', r.completed_at)
    when 'failed' then jsonb_build_object('type', 'run:failed', 'runId', r.run_id,
      'flowSlug', r.flow_slug,
      'stepSlug', (select ss.step_slug from sluice.step_states ss
        where ss.run_id = r.run_id and ss.status = 'failed' limit 1),
      'errorMessage', r.error_message, 'at', r.failed_at)
    when 'cancelled' then jsonb_build_object('type', 'run:cancelled', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'reason', r.cancel_reason, 'cancelledBy', r.cancelled_by,
      'at', r.cancelled_at)
    when 'retried' then jsonb_build_object('type', 'run:retried', 'runId', r.run_id,
      'flowSlug', r.flow_slug, 'retryCount', r.retry_count, 'retriedBy', r.retried_by,
      'at', r.retried_at)
  end;
end;
$$;

-- As in migration 20261130001700, except that a run going back to 'started' sends nothing here:
-- sluice.retry_run sends run:retried itself, before the step events of the retry (this trigger
-- is deferred to commit, which would put it after them).
create or replace function sluice.send_run_status_event()
returns trigger
language plpgsql
as $$
begin
  if tg_op = 'UPDATE' and new.status = 'started' then
    return null;
  end if;
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.run_event(new, new.status));
  end if;
  return null;
end;
$$;

-- As in migration 20261130001700, except that a step going back to 'created' (a retry of a step
-- that never started) sends nothing: its step:started follows when it starts.
create or replace function sluice.send_step_status_event()
returns trigger
language plpgsql
as $$
begin
  if new.status = 'created' then
    return null;
  end if;
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.step_event(new, new.status));
  end if;
  return null;
end;
$$;

-- sluice.run_events (the snapshot of a run's events) changes with cancelled and retried runs;
-- its one definition in this release group is in 20261202000300_sluice_waits.sql, which also
-- adds waiting steps to it.

-- As in migration 20261130001200, with cancelled runs: they finished at cancelled_at.
create or replace function sluice.prune_runs_batch(cutoff timestamptz, batch_size integer)
returns integer
language plpgsql
as $$
declare
  v_runs uuid[];
  v_queues text[];
  v_ids bigint[];
begin
  -- runs_finished_idx answers this in order, reading no more than the batch.
  select array_agg(b.run_id) into v_runs
  from (
    select r.run_id
    from sluice.runs r
    where r.status <> 'started'
      and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < prune_runs_batch.cutoff
    order by coalesce(r.completed_at, r.failed_at, r.cancelled_at)
    limit prune_runs_batch.batch_size
    for update skip locked
  ) b;
  if v_runs is null then
    return 0;
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  where t.run_id = any (v_runs) and t.message_id is not null;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  delete from sluice.runs r where r.run_id = any (v_runs);
  return cardinality(v_runs);
end;
$$;

-- sluice.cancel_run_set (the set-based cancel that cancel_run and cancel_runs call, documented
-- there) is defined in 20261202000300_sluice_waits.sql, which also cancels waiting steps: one
-- definition per release group (docs/architecture.md#migrations).

-- The longest cancel reason stored.
create function sluice.max_cancel_reason_length()
returns integer
language sql
immutable
as $$ select 1000 $$;

create function sluice.check_cancel_reason(reason text, what text)
returns void
language plpgsql
immutable
as $$
begin
  if reason is not null and char_length(reason) > sluice.max_cancel_reason_length() then
    raise exception '%: the reason is % characters, more than the limit of %',
      what, char_length(reason), sluice.max_cancel_reason_length()
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Cancels one run: it ends 'cancelled' with `reason` (and the role that cancelled it); its
-- unfinished steps are cancelled, so no dependent ever starts; its queued tasks are cancelled and
-- their messages archived (a task waiting out a retry delay is queued too); its started tasks are
-- cancelled, which fences their attempts (a late report is stale and changes nothing), and each
-- one's worker aborts the handler's AbortSignal at its next heartbeat. Events: step:cancelled per
-- step, then run:cancelled at commit.
--
-- Answers {run_id, outcome, status, ...}: outcome 'cancelled' (with tasks: how many tasks it
-- cancelled) when it cancelled the run now; 'unchanged' when the run had already ended (status
-- completed, failed or cancelled; a cancelled run's reason stays the first one), so calling it
-- again is harmless. Raises no_data_found when no run has the id.
-- Lock order: see sluice.cancel_run_set (runs -> step_states -> step_tasks -> messages).
create function sluice.cancel_run(run_id uuid, reason text default null)
returns jsonb
language plpgsql
as $$
declare
  v_tasks integer;
  v_run sluice.runs;
begin
  perform sluice.check_cancel_reason(cancel_run.reason,
    format('Cannot cancel run %s', cancel_run.run_id));
  select c.cancelled_tasks into v_tasks
  from sluice.cancel_run_set(array[cancel_run.run_id], cancel_run.reason) c;
  select * into v_run from sluice.runs r where r.run_id = cancel_run.run_id;
  if not found then
    raise exception 'Cannot cancel run %: no such run', cancel_run.run_id
      using errcode = 'no_data_found',
        hint = 'A run is deleted with its flow (delete_flow_and_data, flows reset) and by prune';
  end if;
  return jsonb_build_object(
    'run_id', v_run.run_id,
    'outcome', case when v_tasks is null then 'unchanged' else 'cancelled' end,
    'status', v_run.status,
    'tasks', coalesce(v_tasks, 0),
    'reason', v_run.cancel_reason,
    'cancelled_at', v_run.cancelled_at
  );
end;
$$;

-- Cancels many started runs in one set-based statement: those of `flow_slug` (a concrete slug),
-- optionally only those started through `started_via` (an alias or the slug) or before
-- `started_before`, at most batch_size of them (oldest first; default 500, at most 10,000), as
-- sluice.cancel_run cancels one. Answers {cancelled, run_ids, more}: `more` says that runs
-- matching the filter may remain (the batch was full), so a caller repeats until it is false.
-- Lock order: see sluice.cancel_run_set; the batch's runs are locked in run_id order.
create function sluice.cancel_runs(
  flow_slug text,
  reason text default null,
  started_via text default null,
  started_before timestamptz default null,
  batch_size integer default 500
)
returns jsonb
language plpgsql
as $$
declare
  v_ids uuid[];
begin
  if cancel_runs.flow_slug is null then
    raise exception 'Cannot cancel runs: flow_slug is required (the concrete flow whose runs to cancel)'
      using errcode = 'invalid_parameter_value';
  end if;
  if not exists (select 1 from sluice.flows f where f.flow_slug = cancel_runs.flow_slug) then
    raise exception 'Cannot cancel runs of flow "%": no such flow', cancel_runs.flow_slug
      using errcode = 'no_data_found';
  end if;
  if cancel_runs.batch_size is null or cancel_runs.batch_size < 1
    or cancel_runs.batch_size > 10000
  then
    raise exception 'Cannot cancel runs of flow "%": batch_size must be from 1 to 10000, got %',
      cancel_runs.flow_slug, coalesce(cancel_runs.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  perform sluice.check_cancel_reason(cancel_runs.reason,
    format('Cannot cancel runs of flow "%s"', cancel_runs.flow_slug));

  -- runs_active_idx (flow_slug where status = 'started') answers the candidates.
  select array_agg(c.cancelled_run_id order by c.cancelled_run_id) into v_ids
  from sluice.cancel_run_set(
    array(
      select r.run_id from sluice.runs r
      where r.flow_slug = cancel_runs.flow_slug and r.status = 'started'
        and (cancel_runs.started_via is null or r.started_via = cancel_runs.started_via)
        and (cancel_runs.started_before is null or r.started_at < cancel_runs.started_before)
      order by r.started_at, r.run_id
      limit cancel_runs.batch_size
    ),
    cancel_runs.reason
  ) c;
  return jsonb_build_object(
    'cancelled', coalesce(cardinality(v_ids), 0),
    'run_ids', coalesce(to_jsonb(v_ids), '[]'::jsonb),
    'more', coalesce(cardinality(v_ids), 0) = cancel_runs.batch_size
  );
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
-- Lock order: the run row -> its step states (slug order) -> the tasks it requeues -> messages
-- (new ones sent, the old ones' archived copies deleted): the global ladder.
create function sluice.retry_run(run_id uuid, force boolean default false)
returns jsonb
language plpgsql
as $$
declare
  v_run sluice.runs;
  v_reset text[];
  v_missing text;
  v_missing_routes jsonb;
  v_step record;
  v_ids bigint[];
  v_tasks integer := 0;
begin
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
      array_agg(t.message_id order by t.task_index) as old_ids
    from sluice.step_tasks t
    where t.run_id = retry_run.run_id and t.step_slug = any (v_reset)
      and t.status in ('failed', 'cancelled')
    group by t.step_slug, t.queue_name
    order by t.step_slug
  loop
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

-- The heartbeat of a worker that says which attempts it is running: refreshes the heartbeat as
-- sluice.heartbeat_worker(uuid) does and answers, besides `deprecated`, `aborted`: the running
-- attempts (tasks: [{run_id, step_slug, task_index, attempt}]) that are no longer live, so their
-- handlers should stop: the run was cancelled (or failed), or the task was requeued, retried,
-- finished or deleted since the attempt was claimed. Each entry carries the task's and the run's
-- status (null when gone) and the run's cancel reason, for the abort's message. A worker learns
-- of a cancellation this way, at the latest one heartbeat interval after it commits.
-- Takes no lock beyond the worker row's.
create function sluice.heartbeat_worker(worker_id uuid, tasks jsonb)
returns jsonb
language plpgsql
as $$
declare
  v_result jsonb;
begin
  if jsonb_typeof(heartbeat_worker.tasks) is distinct from 'array' then
    raise exception 'Cannot heartbeat worker %: tasks must be a JSON array of {run_id, step_slug, task_index, attempt}, got %',
      heartbeat_worker.worker_id, coalesce(jsonb_typeof(heartbeat_worker.tasks), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  v_result := sluice.heartbeat_worker(heartbeat_worker.worker_id);
  return v_result || jsonb_build_object('aborted', coalesce((
    select jsonb_agg(jsonb_build_object(
      'run_id', x.run_id, 'step_slug', x.step_slug, 'task_index', x.task_index,
      'attempt', x.attempt, 'task_status', t.status, 'run_status', r.status,
      'cancel_reason', r.cancel_reason
    ) order by x.ord)
    from rows from (jsonb_to_recordset(heartbeat_worker.tasks)
      as (run_id uuid, step_slug text, task_index integer, attempt integer))
      with ordinality as x(run_id, step_slug, task_index, attempt, ord)
    left join sluice.step_tasks t
      on t.run_id = x.run_id and t.step_slug = x.step_slug and t.task_index = x.task_index
    left join sluice.runs r on r.run_id = x.run_id
    where not (t.status is not distinct from 'started'
      and t.attempts_count is not distinct from x.attempt
      and t.last_worker_id is not distinct from heartbeat_worker.worker_id)
  ), '[]'::jsonb));
end;
$$;

-- As in migration 20261130000800, except that the attempt cap counts the current retry round
-- only (attempts_count - attempts_base), and so does the backoff.
create or replace function sluice.fail_task(
  run_id uuid,
  step_slug text,
  task_index integer,
  attempt integer,
  worker_id uuid,
  error text,
  retry_delay_seconds double precision default null
)
returns text
language plpgsql
as $$
declare
  v_task sluice.step_tasks;
  v_max_attempts integer;
  v_base_delay integer;
  v_delay integer;
begin
  if fail_task.retry_delay_seconds is not null
    and not (fail_task.retry_delay_seconds >= 0
      and fail_task.retry_delay_seconds <= sluice.max_retry_delay_seconds())
  then
    raise exception 'Cannot fail task (run %, step "%", index %): retry_delay_seconds must be a finite number from 0 to %, got %',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index,
      sluice.max_retry_delay_seconds(), fail_task.retry_delay_seconds
      using errcode = 'invalid_parameter_value';
  end if;

  if fail_task.attempt is null or fail_task.worker_id is null then
    raise exception 'Cannot fail task (run %, step "%", index %): attempt and worker_id are required, the fencing token its claim handed out',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index
      using errcode = 'invalid_parameter_value';
  end if;

  if sluice.worker_fenced(fail_task.worker_id) then
    return 'stale';
  end if;

  if not exists (
    select 1 from sluice.step_tasks t
    where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
      and t.task_index = fail_task.task_index
  ) then
    raise exception 'Cannot fail task (run %, step "%", index %): no such task',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index
      using errcode = 'no_data_found';
  end if;

  perform 1 from sluice.lock_run_steps(array[fail_task.run_id], array[fail_task.step_slug], false);
  if not found then
    return 'stale';
  end if;

  select * into v_task from sluice.step_tasks t
  where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
    and t.task_index = fail_task.task_index
    and t.status = 'started' and t.attempts_count = fail_task.attempt
    and t.last_worker_id = fail_task.worker_id
  for update;
  if not found then
    return 'stale';
  end if;

  select coalesce(s.opt_max_attempts, f.opt_max_attempts), coalesce(s.opt_base_delay, f.opt_base_delay)
  into v_max_attempts, v_base_delay
  from sluice.steps s
  join sluice.flows f on f.flow_slug = s.flow_slug
  where s.flow_slug = v_task.flow_slug and s.step_slug = v_task.step_slug;

  if v_task.attempts_count - v_task.attempts_base >= v_max_attempts then
    perform sluice.exhaust_task(
      fail_task.run_id, fail_task.step_slug, fail_task.task_index, fail_task.error
    );
    return 'failed';
  end if;

  v_delay := coalesce(
    ceil(fail_task.retry_delay_seconds)::integer,
    sluice.backoff_delay_seconds(v_base_delay, v_task.attempts_count - v_task.attempts_base)
  );

  update sluice.step_tasks t
  set status = 'queued', error_message = fail_task.error
  where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
    and t.task_index = fail_task.task_index;

  perform pgmq.set_vt(v_task.queue_name, v_task.message_id, v_delay);
  if not found then
    raise exception 'Cannot retry task (run %, step "%", index %): its message % is missing from queue "%"',
      fail_task.run_id, fail_task.step_slug, fail_task.task_index, v_task.message_id,
      v_task.queue_name;
  end if;
  if v_delay = 0 then
    perform sluice.notify_queue(v_task.queue_name);
  end if;
  return 'retried';
end;
$$;

-- As in migration 20261130000900, except that the attempt cap counts the current retry round
-- only (attempts_count - attempts_base).
create or replace function sluice.requeue_stalled_tasks()
returns integer
language plpgsql
as $$
declare
  v_candidate record;
  v_task sluice.step_tasks;
  v_error text;
  v_handled integer := 0;
begin
  for v_candidate in
    with candidates as (
      select t.run_id, t.step_slug, t.task_index, t.started_at,
        make_interval(secs =>
          coalesce(s.opt_timeout, f.opt_timeout) + sluice.stall_margin_seconds()) as stall_after,
        coalesce(s.opt_max_attempts, f.opt_max_attempts) as max_attempts
      from sluice.step_tasks t
      join sluice.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
      join sluice.flows f on f.flow_slug = t.flow_slug
      where t.status = 'started' and t.started_at is not null
        and t.started_at < clock_timestamp() - make_interval(secs =>
          coalesce(s.opt_timeout, f.opt_timeout) + sluice.stall_margin_seconds())
      order by t.started_at
      limit 100
    )
    select c.* from candidates c
    where (c.run_id, c.step_slug) in (
      select l.run_id, l.step_slug
      from sluice.lock_run_steps(
        array(select c2.run_id from candidates c2),
        array(select c2.step_slug from candidates c2),
        true
      ) l
    )
    order by c.started_at
  loop
    select * into v_task from sluice.step_tasks t
    where t.run_id = v_candidate.run_id and t.step_slug = v_candidate.step_slug
      and t.task_index = v_candidate.task_index and t.status = 'started'
    for update;
    continue when not found
      or v_task.started_at >= clock_timestamp() - v_candidate.stall_after;

    v_error := format('stalled: no report of attempt %s within %s', v_task.attempts_count,
      v_candidate.stall_after);
    if v_task.attempts_count - v_task.attempts_base < v_candidate.max_attempts then
      update sluice.step_tasks t
      set status = 'queued', requeued_count = t.requeued_count + 1, error_message = v_error
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform pgmq.set_vt(v_task.queue_name, v_task.message_id, 0);
      perform sluice.notify_queue(v_task.queue_name);
    else
      update sluice.step_tasks t set permanently_stalled_at = clock_timestamp()
      where t.run_id = v_task.run_id and t.step_slug = v_task.step_slug
        and t.task_index = v_task.task_index;
      perform sluice.exhaust_task(
        v_task.run_id, v_task.step_slug, v_task.task_index,
        format('%s, the last of %s attempts', v_error, v_candidate.max_attempts)
      );
    end if;
    v_handled := v_handled + 1;
  end loop;
  return v_handled;
end;
$$;

-- As in migration 20261130000600, except that a claimed task's max_attempts is the number of the
-- last attempt of its current retry round (attempts_base + the effective max_attempts): a
-- handler still tells its last attempt by attempt = maxAttempts after a retry, while attempt
-- numbers keep counting up across rounds.
create or replace function sluice.start_tasks(
  queue_name text,
  message_ids bigint[],
  worker_id uuid,
  supported jsonb
)
returns jsonb
language plpgsql
-- Custom plans made every claim re-plan its statements (the classification join most of all),
-- which cost more than executing them: measured 4-6 ms per one-message claim against 2-3 ms
-- with generic plans, whose index probes by message key do not depend on the batch.
set plan_cache_mode = force_generic_plan
as $$
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
      'flow_input', r.input
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
$$;

revoke all on all routines in schema sluice from public;
