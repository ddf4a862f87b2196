-- sluice.resume_schedule, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Resumes a paused schedule with the next due times the caller computed from `resumed_at`: the
-- ticks that fell in the pause are not made up (a pause is deliberate, not an outage). Returns
-- whether it was paused (false: it was running already, and nothing changed).
CREATE OR REPLACE FUNCTION sluice.resume_schedule(schedule_name text, next_due_at timestamp with time zone, following_due_at timestamp with time zone, resumed_at timestamp with time zone DEFAULT clock_timestamp()) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
