-- sluice.claim_respawn, as the migrations create it (last defined in supabase/migrations/20261130001400_sluice_respawn_debounce.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.claim_respawn(function_name text, seen_invoked_at timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with claimed as (
    update sluice.worker_functions wf
    set last_invoked_at = now(), updated_at = now()
    where wf.function_name = claim_respawn.function_name
      and wf.enabled
      and wf.restart_paused_at is null
      and wf.last_invoked_at is not distinct from claim_respawn.seen_invoked_at
    returning 1
  )
  select exists (select 1 from claimed)
$$;
