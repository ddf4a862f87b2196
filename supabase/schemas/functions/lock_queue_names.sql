-- sluice.lock_queue_names, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Flows of different slugs can name the same queue (a shared queue of routed flows, or colliding
-- private names), so the flow lock alone does not keep two of them from creating it at once, and
-- PGMQ 1.5.1 does not serialize creators (the loser fails on a catalog unique index). One lock per
-- queue name, taken in name order after the flow lock and held to commit, makes the later creator
-- wait; its validate_routes then sees the winner's queue and registry row. Lock order: flow, then
-- queue names ascending.
CREATE OR REPLACE FUNCTION sluice.lock_queue_names(shape jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queue text;
begin
  for v_queue in
    select distinct s ->> 'queue_name' from jsonb_array_elements(shape -> 'steps') s order by 1
  loop
    perform pg_advisory_xact_lock(hashtextextended('sluice.queue:' || v_queue, 0));
  end loop;
end;
$$;
