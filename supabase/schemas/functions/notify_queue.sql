-- sluice.notify_queue, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Workers LISTEN on this channel; the payload is the queue name. Postgres folds identical
-- notifications of one transaction into one, so a transaction that sends many messages to a
-- queue wakes its workers once.
CREATE OR REPLACE FUNCTION sluice.notify_queue(queue_name text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pg_notify('sluice_queue_ready', notify_queue.queue_name) $$;
