-- sluice.drop_queue, as the migrations create it (last defined in supabase/migrations/20261130001500_sluice_privileges.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.drop_queue(flow_slug text, queue text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgmq.drop_queue(drop_queue.queue);
exception when insufficient_privilege then
  perform sluice.queue_owner_error('delete', drop_queue.flow_slug, drop_queue.queue, sqlerrm);
  raise;
end;
$$;
