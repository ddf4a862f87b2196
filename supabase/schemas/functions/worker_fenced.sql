-- sluice.worker_fenced, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A worker is fenced once its flow was compiled again after the compile it registered for (a
-- development recompile, or a reset and a new compile): its claims and its reports are refused,
-- live or not, so a worker paused past the heartbeat TTL cannot run its old handlers on the new
-- shape. A worker that registered without a flow is never fenced.
CREATE OR REPLACE FUNCTION sluice.worker_fenced(worker_id uuid) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select exists (
    select 1 from sluice.workers w
    left join sluice.flows f on f.flow_slug = w.flow_slug
    where w.worker_id = worker_fenced.worker_id
      and w.flow_generation is not null
      and f.compile_generation is distinct from w.flow_generation
  )
$$;
