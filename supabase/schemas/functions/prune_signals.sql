-- sluice.prune_signals, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes the signals that expired, and the consumed ones consumed before `cutoff`. Returns how
-- many it deleted.
CREATE OR REPLACE FUNCTION sluice.prune_signals(cutoff timestamp with time zone) RETURNS integer
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with pruned as (
    delete from sluice.signals s
    where s.expires_at <= now() or s.consumed_at < prune_signals.cutoff
    returning 1
  )
  select count(*)::integer from pruned;
$$;
