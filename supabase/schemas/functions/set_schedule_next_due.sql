-- sluice.set_schedule_next_due, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Stores next due times computed by the Deno side: `due` is a JSON array of
-- {schedule_name, advanced_at, next_due_at, following_due_at}. Each applies only while the
-- schedule still awaits it from that same advanced_at (a compare-and-set: a due time computed
-- from an older state, or for a deleted or paused schedule, changes nothing). Returns how many
-- were stored.
CREATE OR REPLACE FUNCTION sluice.set_schedule_next_due(due jsonb) RETURNS integer
    LANGUAGE sql
    AS $$
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
