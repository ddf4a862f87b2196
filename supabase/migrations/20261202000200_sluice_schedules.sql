-- Schedules: start a flow (a concrete version, or through an alias) on a cron schedule.
--
-- SQL never parses cron. The expression is stored for the Deno side (croner, in
-- src/dsl/schedule_times.ts), which computes every due time; SQL stores the next one it is given
-- (next_due_at) and the one after it (following_due_at), and fires. Firing is
-- sluice.fire_due_schedules(now): every worker's heartbeat calls it, and so may pg_cron. It starts
-- the run of each due tick, records the tick, and leaves next_due_at null: "the Deno side owes the
-- next due time". The worker's heartbeat computes and stores it in its next statement
-- (sluice.set_schedule_next_due, a compare-and-set); a firing by pg_cron leaves it to the next
-- heartbeat of any worker. No tick is lost in between: the next due time is the first tick after advanced_at, and a
-- tick already past by then is a missed tick (below).
--
-- Exactly one run per tick: sluice.schedule_ticks has the primary key (schedule_name, due_at), and
-- a run is started only by the statement whose insert of that tick row succeeded. The schedule
-- row is locked for update skip locked first, so concurrent firers (many heartbeats, pg_cron) do
-- not even wait for each other; a firer that reads the schedule after another one committed sees
-- next_due_at null or later. A restart of the server between the two loses nothing either: both
-- are one transaction.
--
-- Missed ticks (every firer down for longer than a tick interval) follow the schedule's `missed`:
--   run-once: one catch-up run, keyed by the first missed tick, then back on the schedule;
--   skip:     no run for missed ticks; the next run is the first tick after the firing.
-- A tick counts as missed when the tick after it is due too (following_due_at <= now): a tick
-- fired late but before its successor is not missed, only late. The Deno side only ever computes
-- the first two ticks after advanced_at; every missed-tick decision is made here, in one place.
--
-- Lock order: the schedule row (for update skip locked), then its tick row, then what starting a
-- run takes (sluice.create_run: the flow's start lock shared, then new rows only). No existing
-- run, step or task is locked, so firing cannot deadlock with claims, completions or recovery.
-- A tick whose run cannot start (its flow was deleted, its input exceeds a limit) is recorded with
-- the error on the tick and the schedule, and the schedule moves on: one broken schedule never
-- blocks the others. A transient error (deadlock, resources, lock timeout) is raised instead, so
-- nothing of the firing commits and the next sweep tries the tick again.

create table sluice.schedules (
  schedule_name text primary key check (sluice.is_valid_slug(schedule_name)),
  -- 'flow': start the concrete flow `target` (start_flow_version); 'alias': start through the
  -- alias `target`, resolved at each tick, so the schedule follows version switches.
  target_kind text not null check (target_kind in ('flow', 'alias')),
  target text not null,
  input jsonb not null,
  cron text not null,
  timezone text not null,
  missed text not null check (missed in ('run-once', 'skip')),
  -- Null while the Deno side owes the next due time (just fired, or just resumed by SQL alone).
  next_due_at timestamptz,
  following_due_at timestamptz,
  -- Every tick up to this time is accounted for (fired, or skipped as missed).
  advanced_at timestamptz not null,
  paused_at timestamptz,
  created_at timestamptz not null default now(),
  last_fired_at timestamptz,
  last_run_id uuid,
  last_error text,
  check (following_due_at is null or following_due_at > next_due_at)
);

comment on table sluice.schedules is
  'Cron schedules of flow starts. Written by create_schedule, fire_due_schedules, set_schedule_next_due, pause_schedule, resume_schedule and delete_schedule only.';

create index schedules_due on sluice.schedules (next_due_at) where paused_at is null;

create table sluice.schedule_ticks (
  schedule_name text not null references sluice.schedules on delete cascade,
  due_at timestamptz not null,
  fired_at timestamptz not null,
  -- Whether the tick fired as a catch-up for missed ticks (missed = 'run-once').
  catch_up boolean not null,
  run_id uuid,
  error text,
  primary key (schedule_name, due_at)
);

comment on table sluice.schedule_ticks is
  'One row per fired tick of a schedule; its primary key is what makes a tick start exactly one run.';

-- How many of a schedule's latest fired ticks sluice.schedule_ticks keeps.
create function sluice.schedule_ticks_kept()
returns integer
language sql
immutable
as $$ select 1000 $$;

-- Creates a schedule with its first due times (computed by the caller from the cron expression).
-- Validates everything before writing; a schedule of that name must not exist.
create function sluice.create_schedule(
  schedule_name text,
  target_kind text,
  target text,
  input jsonb,
  cron text,
  timezone text,
  missed text,
  next_due_at timestamptz,
  following_due_at timestamptz,
  created_at timestamptz default clock_timestamp()
)
returns sluice.schedules
language plpgsql
as $$
declare
  v_row sluice.schedules;
begin
  if create_schedule.schedule_name is null or not sluice.is_valid_slug(create_schedule.schedule_name) then
    raise exception 'Cannot create schedule "%": a schedule name starts with a letter and holds letters, digits and single underscores',
      create_schedule.schedule_name using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.target_kind is distinct from 'flow' and create_schedule.target_kind is distinct from 'alias' then
    raise exception 'Cannot create schedule "%": target kind must be flow or alias, got %',
      create_schedule.schedule_name, coalesce(create_schedule.target_kind, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.missed is distinct from 'run-once' and create_schedule.missed is distinct from 'skip' then
    raise exception 'Cannot create schedule "%": missed must be run-once or skip, got %',
      create_schedule.schedule_name, coalesce(create_schedule.missed, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.input is null then
    raise exception 'Cannot create schedule "%": input is null; pass a JSON value',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  if create_schedule.next_due_at is null or create_schedule.cron is null
    or create_schedule.timezone is null then
    raise exception 'Cannot create schedule "%": cron, timezone and the next due time are required',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  if create_schedule.target_kind = 'flow' and not exists (
    select 1 from sluice.flows f where f.flow_slug = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no flow "%"', create_schedule.schedule_name,
      create_schedule.target using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  if create_schedule.target_kind = 'alias' and not exists (
    select 1 from sluice.aliases a where a.alias = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no alias "%"', create_schedule.schedule_name,
      create_schedule.target using errcode = 'no_data_found',
        hint = 'Every compiled flow has an alias of its own name; activate_alias creates others';
  end if;
  insert into sluice.schedules (schedule_name, target_kind, target, input, cron, timezone, missed,
    next_due_at, following_due_at, advanced_at, created_at)
  values (create_schedule.schedule_name, create_schedule.target_kind, create_schedule.target,
    create_schedule.input, create_schedule.cron, create_schedule.timezone, create_schedule.missed,
    create_schedule.next_due_at, create_schedule.following_due_at, create_schedule.created_at,
    create_schedule.created_at)
  on conflict on constraint schedules_pkey do nothing
  returning * into v_row;
  if v_row.schedule_name is null then
    raise exception 'Cannot create schedule "%": a schedule of that name exists',
      create_schedule.schedule_name using errcode = 'unique_violation',
        hint = 'Delete it first, or choose another name';
  end if;
  return v_row;
end;
$$;

-- Fires every due, unpaused schedule (at most max_schedules per call, oldest due first): one run
-- per tick, as described at the top. Returns the schedules that now await their next due time
-- (the ones it fired or skipped, and any other unpaused one awaiting it; `fired` says which ticks
-- this call fired), locked for the rest of the caller's transaction if it has one. The caller
-- computes their next due times and stores them with sluice.set_schedule_next_due, whose
-- compare-and-set makes a racing or late computation harmless.
create function sluice.fire_due_schedules(
  now timestamptz default clock_timestamp(),
  max_schedules integer default 100
)
returns table (
  schedule_name text,
  cron text,
  timezone text,
  advanced_at timestamptz,
  fired boolean
)
language plpgsql
as $$
declare
  v_schedule sluice.schedules;
  v_overtaken boolean;
  v_inserted boolean;
  v_run_id uuid;
  v_error text;
  v_fired text[] := '{}';
begin
  if fire_due_schedules.now is null then
    raise exception 'Cannot fire schedules: now is null' using errcode = 'null_value_not_allowed';
  end if;
  for v_schedule in
    select s.* from sluice.schedules s
    where s.paused_at is null and s.next_due_at <= fire_due_schedules.now
    order by s.next_due_at, s.schedule_name
    limit greatest(fire_due_schedules.max_schedules, 1)
    for update of s skip locked
  loop
    v_overtaken := v_schedule.following_due_at is not null
      and v_schedule.following_due_at <= fire_due_schedules.now;
    v_run_id := null;
    v_error := null;
    v_inserted := null;
    if not (v_overtaken and v_schedule.missed = 'skip') then
      insert into sluice.schedule_ticks as t (schedule_name, due_at, fired_at, catch_up)
      values (v_schedule.schedule_name, v_schedule.next_due_at, fire_due_schedules.now, v_overtaken)
      on conflict do nothing
      returning true into v_inserted;
      if v_inserted then
        begin
          if v_schedule.target_kind = 'alias' then
            v_run_id := sluice.start_flow(v_schedule.target, v_schedule.input);
          else
            v_run_id := sluice.start_flow_version(v_schedule.target, v_schedule.input);
          end if;
        exception when others then
          -- A transient failure (serialization or deadlock, insufficient resources, a lock not
          -- available) fails the whole firing, so the next sweep fires the tick again.
          if sqlstate like '40%' or sqlstate like '53%' or sqlstate = '55P03' then
            raise;
          end if;
          -- Otherwise the subtransaction undid the half-started run; the tick stays fired, with
          -- its error.
          v_error := sqlerrm;
        end;
        update sluice.schedule_ticks t set run_id = v_run_id, error = v_error
        where t.schedule_name = v_schedule.schedule_name and t.due_at = v_schedule.next_due_at;
        v_fired := v_fired || v_schedule.schedule_name;
        -- Keep the latest ticks only (a per-second schedule would otherwise grow by 86400 rows a
        -- day). An older tick never comes due again: due times are computed after advanced_at,
        -- which only moves forward.
        delete from sluice.schedule_ticks t
        where t.schedule_name = v_schedule.schedule_name and t.due_at < (
          select k.due_at from sluice.schedule_ticks k
          where k.schedule_name = v_schedule.schedule_name
          order by k.due_at desc offset sluice.schedule_ticks_kept() - 1 limit 1
        );
      end if;
    end if;
    update sluice.schedules s set
      next_due_at = null,
      following_due_at = null,
      advanced_at = greatest(s.advanced_at, fire_due_schedules.now),
      last_fired_at = case when v_inserted then fire_due_schedules.now else s.last_fired_at end,
      last_run_id = coalesce(v_run_id, s.last_run_id),
      last_error = case when v_inserted then v_error else s.last_error end
    where s.schedule_name = v_schedule.schedule_name;
  end loop;

  return query
    select s.schedule_name, s.cron, s.timezone, s.advanced_at,
      s.schedule_name = any(v_fired)
    from sluice.schedules s
    where s.paused_at is null and s.next_due_at is null
    order by s.schedule_name
    for update of s skip locked;
end;
$$;

-- Stores next due times computed by the Deno side: `due` is a JSON array of
-- {schedule_name, advanced_at, next_due_at, following_due_at}. Each applies only while the
-- schedule still awaits it from that same advanced_at (a compare-and-set: a due time computed
-- from an older state, or for a deleted or paused schedule, changes nothing). Returns how many
-- were stored.
create function sluice.set_schedule_next_due(due jsonb)
returns integer
language sql
as $$
  with given as (
    select d.schedule_name, d.advanced_at, d.next_due_at, d.following_due_at
    from jsonb_to_recordset(coalesce(set_schedule_next_due.due, '[]'::jsonb)) as d(
      schedule_name text, advanced_at timestamptz, next_due_at timestamptz,
      following_due_at timestamptz)
    where d.next_due_at is not null
  ),
  stored as (
    update sluice.schedules s set
      next_due_at = g.next_due_at,
      following_due_at = g.following_due_at
    from given g
    where s.schedule_name = g.schedule_name and s.advanced_at = g.advanced_at
      and s.next_due_at is null and s.paused_at is null
    returning s.schedule_name
  )
  select count(*)::integer from stored;
$$;

-- Pauses a schedule: no tick fires until it is resumed. Returns whether it was running
-- (false: it was paused already). Raises no_data_found for an unknown name.
create function sluice.pause_schedule(schedule_name text)
returns boolean
language plpgsql
as $$
declare
  v_paused_at timestamptz;
begin
  select s.paused_at into v_paused_at from sluice.schedules s
  where s.schedule_name = pause_schedule.schedule_name
  for update;
  if not found then
    raise exception 'Cannot pause schedule "%": no such schedule', pause_schedule.schedule_name
      using errcode = 'no_data_found';
  end if;
  if v_paused_at is not null then
    return false;
  end if;
  update sluice.schedules s set paused_at = clock_timestamp()
  where s.schedule_name = pause_schedule.schedule_name;
  return true;
end;
$$;

-- Resumes a paused schedule with the next due times the caller computed from `resumed_at`: the
-- ticks that fell in the pause are not made up (a pause is deliberate, not an outage). Returns
-- whether it was paused (false: it was running already, and nothing changed).
create function sluice.resume_schedule(
  schedule_name text,
  next_due_at timestamptz,
  following_due_at timestamptz,
  resumed_at timestamptz default clock_timestamp()
)
returns boolean
language plpgsql
as $$
declare
  v_paused_at timestamptz;
begin
  select s.paused_at into v_paused_at from sluice.schedules s
  where s.schedule_name = resume_schedule.schedule_name
  for update;
  if not found then
    raise exception 'Cannot resume schedule "%": no such schedule', resume_schedule.schedule_name
      using errcode = 'no_data_found';
  end if;
  if v_paused_at is null then
    return false;
  end if;
  if resume_schedule.next_due_at is null then
    raise exception 'Cannot resume schedule "%": the next due time is required',
      resume_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  update sluice.schedules s set
    paused_at = null,
    advanced_at = greatest(s.advanced_at, resume_schedule.resumed_at),
    next_due_at = resume_schedule.next_due_at,
    following_due_at = resume_schedule.following_due_at
  where s.schedule_name = resume_schedule.schedule_name;
  return true;
end;
$$;

-- Deletes a schedule and its tick history; the runs it started stay. Returns whether it existed.
create function sluice.delete_schedule(schedule_name text)
returns boolean
language sql
as $$
  with deleted as (
    delete from sluice.schedules s where s.schedule_name = delete_schedule.schedule_name
    returning 1
  )
  select exists (select 1 from deleted);
$$;

revoke all on all routines in schema sluice from public;
revoke all on sluice.schedules, sluice.schedule_ticks from public;
