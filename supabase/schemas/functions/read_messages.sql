-- sluice.read_messages, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The worker's reads. PGMQ's own pgmq.read and pgmq.read_with_poll carry no pinned path, and the
-- real extension is not sluice's to alter: called straight from a worker's session they ran with
-- its path, where public.format(text, jsonb, text, interval) outmatches pg_catalog's variadic
-- format inside pgmq.read. Called through these, they run with the pin like everything else.
-- Since migration 20261207234000 they read in priority order (sluice.read_prioritized).
CREATE OR REPLACE FUNCTION sluice.read_messages(queue_name text, vt integer, qty integer) RETURNS SETOF pgmq.message_record
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select * from sluice.read_prioritized(read_messages.queue_name, read_messages.vt,
    read_messages.qty)
$$;
