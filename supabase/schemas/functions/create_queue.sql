-- sluice.create_queue, as the migrations create it (last defined in supabase/migrations/20261130001500_sluice_privileges.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.create_queue(flow_slug text, queue text) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
  perform pgmq.create(create_queue.queue);
exception when insufficient_privilege then
  perform sluice.queue_owner_error('compile', create_queue.flow_slug, create_queue.queue, sqlerrm);
  raise;
end;
$$;
