-- sluice.stop_worker, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.stop_worker(worker_id uuid) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  update sluice.workers w set stopped_at = coalesce(w.stopped_at, now())
  where w.worker_id = stop_worker.worker_id
$$;
