-- Live run events (docs/events.md): row triggers on sluice.runs and sluice.step_states turn the
-- state changes of a run that matter to a person into JSON events, sent with pg_notify on the
-- run's channel and, where Supabase Realtime is installed, with realtime.send on the run's topic.
-- One event type for both transports; the same builders replay a run's current state.
--
-- Lock order: the triggers run inside the transition that fired them, which already holds the
-- run row lock (runs -> step_states -> step_tasks -> PGMQ message rows); they read sluice.flows
-- and the run's step states and take no lock of their own.
-- Ordering: every transition of a run holds its run row lock, so the transactions of one run
-- commit one after another; PostgreSQL delivers a transaction's notifications in the order they
-- were sent, and transactions' notifications in commit order. A run's terminal event is sent by
-- a deferred constraint trigger, at commit, after every step event of its transaction
-- (sluice.fail_run marks the run failed before it fails and cancels its steps).
-- Invariants: an event never changes orchestration state; events are on or off per flow
-- (sluice.flows.opt_events, a runtime option); a step sends at most one progress event per
-- opt_progress_interval seconds, and none for the task that completes it.

alter table sluice.flows
  add column opt_events boolean not null default true,
  add column opt_progress_interval integer not null default 1
    check (opt_progress_interval >= 0);

-- When the step last sent a progress event (the throttle's clock).
alter table sluice.step_states add column progress_sent_at timestamptz;

-- The NOTIFY channel of a run: 43 bytes, within the 63-byte identifier limit, and a plain
-- identifier (LISTEN needs no quoting).
create function sluice.run_channel(run_id uuid)
returns text
language sql
immutable
as $$ select 'sluice_run_' || replace(run_id::text, '-', '') $$;

-- The Supabase Realtime topic of a run.
create function sluice.run_topic(run_id uuid)
returns text
language sql
immutable
as $$ select 'sluice:run:' || run_id::text $$;

-- The event a run sends on reaching status (started, completed or failed).
create function sluice.run_event(r sluice.runs, status text)
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
  end;
end;
$$;

-- The event a step sends on reaching status.
create function sluice.step_event(ss sluice.step_states, status text)
returns jsonb
language plpgsql
immutable
as $$
begin
  return case status
    when 'started' then jsonb_build_object('type', 'step:started', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'tasks', ss.initial_tasks, 'at', ss.started_at)
    when 'completed' then jsonb_build_object('type', 'step:completed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'output', ss.output, 'at', ss.completed_at)
    when 'failed' then jsonb_build_object('type', 'step:failed', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'errorMessage', ss.error_message, 'at', ss.failed_at)
    when 'skipped' then jsonb_build_object('type', 'step:skipped', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'reason', ss.skip_reason, 'errorMessage', ss.error_message,
      'at', ss.skipped_at)
    when 'cancelled' then jsonb_build_object('type', 'step:cancelled', 'runId', ss.run_id,
      'stepSlug', ss.step_slug, 'at', ss.cancelled_at)
  end;
end;
$$;

-- A step's task progress: done of total tasks, as of at.
create function sluice.step_progress_event(ss sluice.step_states, at timestamptz)
returns jsonb
language plpgsql
immutable
as $$
begin
  return jsonb_build_object('type', 'step:progress', 'runId', ss.run_id,
    'stepSlug', ss.step_slug, 'done', ss.initial_tasks - ss.remaining_tasks,
    'total', ss.initial_tasks, 'at', at);
end;
$$;

-- NOTIFY refuses a payload of 8000 bytes or more.
create function sluice.max_event_bytes()
returns integer
language sql
immutable
as $$ select 7999 $$;

-- An error text as a browser may see it: stack frames ("    at f (file:///...:1:2)") dropped,
-- file URLs and absolute source paths replaced by "<file>". What the error says stays.
create function sluice.browser_error_message(message text)
returns text
language sql
immutable
as $$
  select regexp_replace(
    regexp_replace(message, '\n[ \t]*at [^\n]*', '', 'g'),
    'file://[^\s)]*|(/[^\s/()]+)+\.[cm]?[jt]sx?(:[0-9]+)*', '<file>', 'g')
$$;

-- An event as a browser may see it: its error text through sluice.browser_error_message.
create function sluice.browser_event(event jsonb)
returns jsonb
language sql
immutable
as $$
  select case when jsonb_typeof(event -> 'errorMessage') = 'string'
    then jsonb_set(event, '{errorMessage}',
      to_jsonb(sluice.browser_error_message(event ->> 'errorMessage')))
    else event end
$$;

-- Sends one event of a run on both transports. NOTIFY carries ids, states and counts only: any
-- role that can connect may LISTEN on a run's channel, so the event's output and error message
-- are left out and listed under "omitted", for a consumer to read from the run
-- (sluice.run_events, a privileged read) when it needs them. Realtime (a private topic behind
-- the project's authorization policies) gets the event with its error text stripped of stack
-- frames and file paths; one too large for it leaves out its output, then its error message, and
-- lists them under "omitted" the same way.
create function sluice.send_run_event(run_id uuid, event jsonb)
returns void
language plpgsql
as $$
declare
  v_omitted jsonb;
  v_text text;
  v_field text;
begin
  select jsonb_agg(f.field order by f.n) into v_omitted
  from unnest(array['output', 'errorMessage']) with ordinality as f(field, n)
  where event ? f.field;
  perform pg_notify(sluice.run_channel(run_id),
    (event - 'output' - 'errorMessage'
      || case when v_omitted is null then '{}' else jsonb_build_object('omitted', v_omitted) end
    )::text);
  -- Supabase Realtime's broadcast from the database, where it is installed: private topic, so
  -- only subscribers that the project's Realtime authorization policies admit receive it.
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is not null then
    event := sluice.browser_event(event);
    v_text := event::text;
    if octet_length(v_text) > sluice.max_event_bytes() then
      foreach v_field in array array['output', 'errorMessage'] loop
        if event ? v_field then
          event := (event - v_field)
            || jsonb_build_object('omitted', coalesce(event -> 'omitted', '[]') || to_jsonb(v_field));
          v_text := event::text;
        end if;
        exit when octet_length(v_text) <= sluice.max_event_bytes();
      end loop;
    end if;
    perform realtime.send(event, event ->> 'type', sluice.run_topic(run_id), true);
  end if;
end;
$$;

-- Trigger: run:started when a run is inserted, run:completed / run:failed (deferred to commit)
-- when its status changes.
create function sluice.send_run_status_event()
returns trigger
language plpgsql
as $$
begin
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.run_event(new, new.status));
  end if;
  return null;
end;
$$;

-- Trigger: step:started / completed / failed / skipped / cancelled when a step's status changes.
create function sluice.send_step_status_event()
returns trigger
language plpgsql
as $$
begin
  if (select f.opt_events from sluice.flows f where f.flow_slug = new.flow_slug) then
    perform sluice.send_run_event(new.run_id, sluice.step_event(new, new.status));
  end if;
  return null;
end;
$$;

-- Trigger (before update, so the throttle's clock is written with the row and costs no second
-- update): step:progress when a started step's remaining tasks drop and its last progress event
-- (or its start) is at least the flow's progress interval ago.
create function sluice.send_step_progress_event()
returns trigger
language plpgsql
as $$
declare
  v_events boolean;
  v_interval integer;
  -- Transaction time, like every other event's timestamp.
  v_now timestamptz := now();
begin
  select f.opt_events, f.opt_progress_interval into v_events, v_interval
  from sluice.flows f where f.flow_slug = new.flow_slug;
  if v_events
    and coalesce(old.progress_sent_at, old.started_at) + make_interval(secs => v_interval) <= v_now
  then
    new.progress_sent_at := v_now;
    perform sluice.send_run_event(new.run_id, sluice.step_progress_event(new, v_now));
  end if;
  return new;
end;
$$;

create trigger runs_started_event
after insert on sluice.runs
for each row execute function sluice.send_run_status_event();

create constraint trigger runs_finished_event
after update of status on sluice.runs
deferrable initially deferred
for each row when (old.status is distinct from new.status)
execute function sluice.send_run_status_event();

create trigger step_states_status_event
after update of status on sluice.step_states
for each row when (old.status is distinct from new.status)
execute function sluice.send_step_status_event();

create trigger step_states_progress_event
before update of remaining_tasks on sluice.step_states
for each row when (
  old.status = 'started' and new.status = 'started' and new.remaining_tasks < old.remaining_tasks
)
execute function sluice.send_step_progress_event();

-- A run's current state as the events that led to it (full outputs, nothing omitted): the
-- replay a late subscriber starts from. Ordered by time; within one transaction (one timestamp)
-- the run's start first, then steps in step order (each started -> progress -> terminal), the
-- run's end last. Null when there is no such run.
create function sluice.run_events(run_id uuid)
returns jsonb
language sql
stable
as $$
  select jsonb_agg(e.event order by e.last, e.at, e.step_index, e.stage)
  from sluice.runs r
  cross join lateral (
    select sluice.run_event(r, 'started') as event, false as last, r.started_at as at,
      -1 as step_index, 0 as stage
    union all
    select sluice.run_event(r, r.status), true, coalesce(r.completed_at, r.failed_at), -1, 0
    where r.status <> 'started'
    union all
    select x.event, false, (x.event ->> 'at')::timestamptz, s.step_index, x.stage
    from sluice.step_states ss
    join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
    cross join lateral (
      select sluice.step_event(ss, 'started') as event, 0 as stage
      where ss.started_at is not null
      union all
      select sluice.step_progress_event(ss, coalesce(ss.progress_sent_at, ss.started_at)), 1
      where ss.status = 'started' and ss.remaining_tasks < ss.initial_tasks
      union all
      select sluice.step_event(ss, ss.status), 2
      where ss.status not in ('created', 'started')
    ) x
    where ss.run_id = r.run_id
  ) e
  where r.run_id = run_events.run_id
$$;

-- The browser's entry points (docs/events.md#browsers-and-edge-functions-on-supabase): a run
-- started and its state replayed by a role that holds no privilege on sluice's tables or pgmq.
-- Security definer for that reason, with a fixed search_path; no role may call them until it is
-- granted EXECUTE explicitly (neither anon nor authenticated ever is by a migration), and an
-- application that exposes them to its users wraps them with its own checks.
create function sluice.start_run(flow_ref text, input jsonb)
returns uuid
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  return sluice.start_flow(start_run.flow_ref, start_run.input);
end;
$$;

create function sluice.read_run_events(run_id uuid)
returns jsonb
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  return (select jsonb_agg(sluice.browser_event(e.event) order by e.n)
    from jsonb_array_elements(sluice.run_events(read_run_events.run_id))
      with ordinality as e(event, n));
end;
$$;

revoke all on all routines in schema sluice from public;
