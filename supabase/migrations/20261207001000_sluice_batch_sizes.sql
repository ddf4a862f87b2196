-- batch_sizes: sluice.fire_due_schedules(timestamp with time zone,integer), sluice.release_due_waits(integer).
-- Written by `deno task sql:migration batch_sizes` from supabase/schemas/functions/ (fire_due_schedules.sql, release_due_waits.sql); each routine whole, as its source reads.

-- As in 20261202000200, except that it returns at most max_schedules (from 1 to 10,000; any other
-- value is refused) of the schedules awaiting their next due time (the ones it fired first, then
-- by name), so one sweep computes a bounded number of due times.
CREATE OR REPLACE FUNCTION sluice.fire_due_schedules(now timestamp with time zone DEFAULT clock_timestamp(), max_schedules integer DEFAULT 100) RETURNS TABLE(schedule_name text, cron text, timezone text, advanced_at timestamp with time zone, fired boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
  -- A zero or negative size used to be clamped to 1 silently: refused, naming it.
  if fire_due_schedules.max_schedules is null or fire_due_schedules.max_schedules < 1
    or fire_due_schedules.max_schedules > 10000
  then
    raise exception 'Cannot fire schedules: max_schedules must be from 1 to 10000, got %',
      coalesce(fire_due_schedules.max_schedules::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  for v_schedule in
    select s.* from sluice.schedules s
    where s.paused_at is null and s.next_due_at <= fire_due_schedules.now
    order by s.next_due_at, s.schedule_name
    limit fire_due_schedules.max_schedules
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
    order by s.schedule_name = any(v_fired) desc, s.schedule_name
    limit fire_due_schedules.max_schedules
    for update of s skip locked;
end;
$$;

-- Releases the waits that are due (at most batch_size, from 1 to 10,000, earliest first): a sleep completes with
-- its due time (an ISO instant) as its output; a signal wait past its timeout follows its
-- on_timeout: 'fail' fails the run, 'skip' skips the step (reason wait_timed_out; dependents run
-- without it), 'value' completes it with the timeout value. Dependents start in the same
-- transaction. Every worker's heartbeat calls it; pg_cron may too. Runs another transaction
-- holds are skipped (their waits are released by a later call), and each wait is re-checked
-- under its run's lock: many concurrent sweepers release each wait exactly once. Returns how
-- many waits it released.
CREATE OR REPLACE FUNCTION sluice.release_due_waits(batch_size integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run_ids uuid[];
  v_slugs text[];
  v_state sluice.step_states;
  v_step sluice.steps;
  v_released integer := 0;
  v_runs uuid[] := '{}';
  v_run uuid;
begin
  -- A zero or negative size used to be clamped to 1 silently: refused, naming it.
  if release_due_waits.batch_size is null or release_due_waits.batch_size < 1
    or release_due_waits.batch_size > 10000
  then
    raise exception 'Cannot release due waits: batch_size must be from 1 to 10000, got %',
      coalesce(release_due_waits.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select array_agg(c.run_id), array_agg(c.step_slug) into v_run_ids, v_slugs
  from (
    select ss.run_id, ss.step_slug from sluice.step_states ss
    where ss.status = 'waiting' and ss.wait_until <= now()
    order by ss.wait_until
    limit release_due_waits.batch_size
  ) c;
  if v_run_ids is null then
    return 0;
  end if;

  for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, true) loop
    continue when v_state.status <> 'waiting' or v_state.wait_until > now();
    select * into v_step from sluice.steps s
    where s.flow_slug = v_state.flow_slug and s.step_slug = v_state.step_slug;
    -- A run failed by an earlier wait of this loop is no longer started.
    continue when (select r.status from sluice.runs r where r.run_id = v_state.run_id)
      <> 'started';
    v_released := v_released + 1;
    if v_step.step_type = 'sleep' then
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        to_jsonb(sluice.iso_instant(v_state.wait_until)));
    elsif v_step.wait_options ->> 'on_timeout' = 'fail' then
      perform sluice.fail_run(v_state.run_id, v_state.step_slug,
        format('step "%s" timed out after %s s waiting for a signal with key "%s"',
          v_state.step_slug, v_step.wait_options ->> 'timeout_seconds', v_state.wait_key));
      continue;
    elsif v_step.wait_options ->> 'on_timeout' = 'skip' then
      perform sluice.skip_steps(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        'wait_timed_out', false);
    else
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        v_step.wait_options -> 'timeout_value');
    end if;
    if not (v_state.run_id = any (v_runs)) then
      v_runs := v_runs || v_state.run_id;
    end if;
  end loop;

  foreach v_run in array v_runs loop
    perform sluice.start_ready_steps(v_run);
  end loop;
  return v_released;
end;
$$;
