-- sluice.read_messages_with_poll, as the migrations create it (last defined in supabase/migrations/20261207000400_sluice_pin_search_path.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.read_messages_with_poll(queue_name text, vt integer, qty integer, max_poll_seconds integer, poll_interval_ms integer) RETURNS SETOF pgmq.message_record
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select * from pgmq.read_with_poll(read_messages_with_poll.queue_name, read_messages_with_poll.vt,
    read_messages_with_poll.qty, read_messages_with_poll.max_poll_seconds,
    read_messages_with_poll.poll_interval_ms)
$$;
