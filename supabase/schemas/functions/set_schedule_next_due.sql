-- sluice.set_schedule_next_due, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Stores next due times computed by the Deno side: `due` is a JSON array of
-- {schedule_name, advanced_at, next_due_at, following_due_at}, or {schedule_name, advanced_at,
-- problem} for a schedule whose next due time cannot be computed (its expression never fires
-- again, or no longer parses): that one is paused, with the problem as its last_error, so no
-- sweep computes it again until it is resumed. Each applies only while the schedule still awaits
-- it from that same advanced_at (a compare-and-set: a due time computed from an older state, or
-- for a deleted or paused schedule, changes nothing). Returns how many were stored or paused.
CREATE OR REPLACE FUNCTION sluice.set_schedule_next_due(due jsonb) RETURNS integer
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with given as (
    select d.schedule_name, d.advanced_at, d.next_due_at, d.following_due_at,
      left(d.problem, 1000) as problem
    from jsonb_to_recordset(coalesce(set_schedule_next_due.due, '[]'::jsonb)) as d(
      schedule_name text, advanced_at timestamptz, next_due_at timestamptz,
      following_due_at timestamptz, problem text)
    where d.next_due_at is not null or d.problem is not null
  ),
  stored as (
    update sluice.schedules s set
      next_due_at = g.next_due_at,
      following_due_at = case when g.next_due_at is null then null else g.following_due_at end,
      paused_at = case when g.next_due_at is null then clock_timestamp() else s.paused_at end,
      last_error = case when g.next_due_at is null
        then 'paused: ' || g.problem else s.last_error end
    from given g
    where s.schedule_name = g.schedule_name and s.advanced_at = g.advanced_at
      and s.next_due_at is null and s.paused_at is null
    returning s.schedule_name
  )
  select count(*)::integer from stored;
$$;
