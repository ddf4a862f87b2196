-- sluice.pause_schedule, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Pauses a schedule: no tick fires until it is resumed. Returns whether it was running
-- (false: it was paused already). Raises no_data_found for an unknown name.
CREATE OR REPLACE FUNCTION sluice.pause_schedule(schedule_name text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
