-- sluice.read_messages_with_poll, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- pgmq.read_with_poll's loop around sluice.read_prioritized: reads until it returns messages or
-- max_poll_seconds are up, sleeping poll_interval_ms between empty reads; each read is its own
-- statement, so it sees messages committed since the previous one.
CREATE OR REPLACE FUNCTION sluice.read_messages_with_poll(queue_name text, vt integer, qty integer, max_poll_seconds integer, poll_interval_ms integer) RETURNS SETOF pgmq.message_record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_stop_at timestamptz := clock_timestamp()
    + make_interval(secs => read_messages_with_poll.max_poll_seconds);
begin
  loop
    return query select * from sluice.read_prioritized(read_messages_with_poll.queue_name,
      read_messages_with_poll.vt, read_messages_with_poll.qty);
    if found or clock_timestamp() >= v_stop_at then
      return;
    end if;
    perform pg_sleep(read_messages_with_poll.poll_interval_ms / 1000.0);
  end loop;
end;
$$;
