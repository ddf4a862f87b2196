-- A cancel sees every task of its runs (issue 45): sluice.cancel_run_set was one SQL statement,
-- and a statement reads from the snapshot it took when it began, before it waited for the run
-- locks. The transaction that held a run's lock meanwhile (a completion releasing a dependent,
-- sluice.send_signal, sluice.release_due_waits, a map fan-out) could create tasks and send their
-- messages; the cancel locked the run after that transaction committed, re-checked the run row
-- (FOR UPDATE follows the newest version of a row it locks), but never saw the rows inserted
-- after its snapshot. Those tasks stayed queued with a live message in a cancelled run: a worker
-- claimed one after cancel_run had answered 'cancelled', and its task stayed 'started' for good
-- (a heartbeat names no attempt of a started task aborted).
--
-- Now the cancel takes the run locks in one statement and does the work in later statements of
-- the same PL/pgSQL function. In READ COMMITTED each of those statements takes a fresh snapshot,
-- taken after the locks are held: it sees everything the former holder committed, and nothing
-- can add a task to a locked run (every writer of a run's step states and tasks holds the run's
-- lock first). The lock order is unchanged: runs (run_id order) -> step_states -> step_tasks ->
-- PGMQ message rows.
--
-- The other run transitions already work this way: sluice.lock_run_steps (complete_tasks,
-- fail_task, send_signal, release_due_waits, requeue_stalled_tasks) locks the runs in one
-- statement and the step states in the next, and each caller reads and writes tasks in later
-- statements; sluice.retry_run locks its run in its first statement, and a failed or cancelled
-- run gets no new task from anyone else while it waits.
--
-- Redefined here (whole, create or replace): cancel_run_set.

-- Cancels the runs among run_ids that are still started: the runs, then their unfinished step
-- states (waiting ones included), then their queued and started tasks, then those tasks' messages
-- (archived on each task's own queue). Returns one row per run it cancelled with the number of
-- tasks it cancelled. A started task's attempt is fenced by the change: its report is stale, and
-- its worker learns of it at its next heartbeat (sluice.heartbeat_worker with its running tasks).
--
-- Lock order: the run rows first, ordered by run_id, in the first statement; then step states
-- and tasks of those runs only, then messages: the global ladder. Every other writer of these
-- step states and tasks holds their run's lock first, so the order within a rung does not matter.
-- A run that finished while this waited for its lock is re-checked and left out; the statements
-- after the first one see every task its former holder created.
create or replace function sluice.cancel_run_set(run_ids uuid[], reason text)
returns table (cancelled_run_id uuid, cancelled_tasks integer)
language plpgsql
as $$
declare
  v_runs uuid[];
  v_task_runs uuid[];
  v_queues text[];
  v_ids bigint[];
begin
  select array_agg(l.run_id order by l.run_id) into v_runs
  from (
    select r.run_id from sluice.runs r
    where r.run_id = any (cancel_run_set.run_ids) and r.status = 'started'
    order by r.run_id
    for update
  ) l;
  if v_runs is null then
    return;
  end if;

  -- From here on every statement's snapshot is taken with the run locks held.
  update sluice.runs r
  set status = 'cancelled', cancelled_at = now(), cancel_reason = cancel_run_set.reason,
    cancelled_by = current_user
  where r.run_id = any (v_runs);

  update sluice.step_states ss
  set status = 'cancelled', cancelled_at = now()
  where ss.run_id = any (v_runs) and ss.status in ('created', 'started', 'waiting');

  with tasks_cancelled as (
    update sluice.step_tasks t
    set status = 'cancelled', cancelled_at = now()
    where t.run_id = any (v_runs) and t.status in ('queued', 'started')
    returning t.run_id, t.queue_name, t.message_id
  )
  select array_agg(t.run_id), array_agg(t.queue_name), array_agg(t.message_id)
  into v_task_runs, v_queues, v_ids
  from tasks_cancelled t;
  if array_remove(v_ids, null) <> '{}' then
    perform sluice.archive_messages(v_queues, v_ids);
  end if;

  return query
    select c.run_id, coalesce(n.tasks, 0)
    from unnest(v_runs) as c(run_id)
    left join (
      select x.run_id, count(*)::integer as tasks from unnest(v_task_runs) as x(run_id)
      group by x.run_id
    ) n on n.run_id = c.run_id
    order by c.run_id;
end;
$$;

-- As every migration since 20261130001500: nothing here is executable or readable by PUBLIC.
revoke all on all routines in schema sluice from public;
