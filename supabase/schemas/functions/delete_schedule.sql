-- sluice.delete_schedule, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes a schedule and its tick history; the runs it started stay. Returns whether it existed.
CREATE OR REPLACE FUNCTION sluice.delete_schedule(schedule_name text) RETURNS boolean
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with deleted as (
    delete from sluice.schedules s where s.schedule_name = delete_schedule.schedule_name
    returning 1
  )
  select exists (select 1 from deleted);
$$;
