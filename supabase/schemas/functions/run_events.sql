-- sluice.run_events, as the migrations create it (last defined in supabase/migrations/20261207232105_sluice_subflow_events.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001700, with a cancelled run's end and a retried run's last retry
-- (after the events of what it kept, before those of what it started again), each wait's
-- step:waiting, and each subflow child's child:started and end (sluice.child_event) after its
-- step's step:waiting and before its step's end, in element order.
CREATE OR REPLACE FUNCTION sluice.run_events(run_id uuid) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_agg(e.event order by e.last, e.at, e.step_index, e.stage, e.child_index)
  from sluice.runs r
  cross join lateral (
    select sluice.run_event(r, 'started') as event, false as last, r.started_at as at,
      -1 as step_index, 0 as stage, -1 as child_index
    union all
    select sluice.run_event(r, 'retried'), false, r.retried_at, -1, 0, -1
    where r.retry_count > 0
    union all
    select sluice.run_event(r, r.status), true,
      coalesce(r.completed_at, r.failed_at, r.cancelled_at), -1, 0, -1
    where r.status <> 'started'
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage, -1
    from sluice.step_states ss
    join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
    cross join lateral (
      select sluice.step_event(ss, 'started') as event, 0 as stage
      where ss.started_at is not null
      union all
      select sluice.step_event(ss, 'waiting'), 0
      where ss.waiting_at is not null
      union all
      select sluice.step_progress_event(ss, coalesce(ss.progress_sent_at, ss.started_at)), 1
      where ss.status = 'started' and ss.remaining_tasks < ss.initial_tasks
      union all
      select sluice.step_event(ss, ss.status), 3
      where ss.status not in ('created', 'started', 'waiting')
    ) x
    where ss.run_id = r.run_id
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage,
      c.parent_task_index
    from sluice.runs c
    join sluice.steps s on s.flow_slug = r.flow_slug and s.step_slug = c.parent_step_slug
    cross join lateral (
      select sluice.child_event(c, 'started') as event, 1 as stage
      union all
      select sluice.child_event(c, c.status), 2
      where c.status <> 'started'
    ) x
    where c.parent_run_id = r.run_id
  ) e
  where r.run_id = run_events.run_id
$$;
