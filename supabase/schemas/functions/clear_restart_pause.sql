-- sluice.clear_restart_pause, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.clear_restart_pause(function_name text) RETURNS boolean
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with cleared as (
    update sluice.worker_functions wf
    set restart_paused_at = null, pause_reason = null, updated_at = now()
    where wf.function_name = clear_restart_pause.function_name
      and wf.restart_paused_at is not null
    returning 1
  )
  select exists (select 1 from cleared)
$$;
