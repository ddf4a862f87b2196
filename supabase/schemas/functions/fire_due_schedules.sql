-- sluice.fire_due_schedules, as the migrations create it (last defined in supabase/migrations/20261207001000_sluice_batch_sizes.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

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
