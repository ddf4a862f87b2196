-- sluice.finish_prune, as the migrations create it (last defined in supabase/migrations/20261207000600_sluice_prune_pinned.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The last step of a prune: deletes workers stopped before the cutoff and the signals
-- sluice.prune_signals removes, and returns the prune's result, {runs, workers, signals}.
CREATE OR REPLACE FUNCTION sluice.finish_prune(cutoff timestamp with time zone, runs bigint) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_workers integer;
begin
  with pruned as (
    delete from sluice.workers w where w.stopped_at < finish_prune.cutoff returning 1
  )
  select count(*) into v_workers from pruned;
  return jsonb_build_object('runs', finish_prune.runs, 'workers', v_workers,
    'signals', sluice.prune_signals(finish_prune.cutoff));
end;
$$;
