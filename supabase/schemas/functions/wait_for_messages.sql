-- sluice.wait_for_messages, as the migrations create it (last defined in supabase/migrations/20261207000300_sluice_wait_for_messages.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Waits until at least one of queue_names has a visible message (vt <= clock_timestamp(), the
-- test pgmq.read applies), checking every interval_ms, for at most max_seconds; returns the queues
-- that have one ('{}' when the time is up first). A queue whose table does not exist is returned
-- as ready: its worker's own read then finds out that the queue is gone. Reads only (no row lock,
-- no write): a message another transaction holds locked counts as visible, and the worker's read
-- skips it. Each check is its own statement, so in read committed it sees messages committed since
-- the previous check. The worker's statement sets client_connection_check_interval for its
-- transaction before calling this (the setting only takes effect from the next statement on), so
-- a wait whose client disconnected ends within that interval instead of holding the backend (or a
-- transaction pooler's server connection) until max_seconds are up.
CREATE OR REPLACE FUNCTION sluice.wait_for_messages(queue_names text[], max_seconds integer, interval_ms integer) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_stop_at timestamp with time zone;
  v_ready text[];
  v_queue text;
  v_table text;
  v_visible boolean;
begin
  if max_seconds is null or max_seconds < 0 then
    raise exception 'Cannot wait for messages: max_seconds must be an integer >= 0, got %',
      coalesce(max_seconds::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if interval_ms is null or interval_ms < 1 then
    raise exception 'Cannot wait for messages: interval_ms must be an integer >= 1, got %',
      coalesce(interval_ms::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  v_stop_at := clock_timestamp() + make_interval(secs => max_seconds);
  loop
    v_ready := '{}';
    foreach v_queue in array coalesce(queue_names, '{}') loop
      v_table := pgmq.format_table_name(v_queue, 'q');
      if to_regclass(format('pgmq.%I', v_table)) is null then
        v_visible := true;
      else
        execute format(
          'select exists (select 1 from pgmq.%I where vt <= clock_timestamp())', v_table
        ) into v_visible;
      end if;
      if v_visible then
        v_ready := v_ready || v_queue;
      end if;
    end loop;
    if cardinality(v_ready) > 0 or clock_timestamp() >= v_stop_at then
      return v_ready;
    end if;
    perform pg_sleep(interval_ms / 1000.0);
  end loop;
end;
$$;
