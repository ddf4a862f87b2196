-- sluice.delete_archived_messages, as the migrations create it (last defined in supabase/migrations/20261130001200_sluice_maintenance.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes the archived copies of messages: queue_names[i] holds message_ids[i]. PGMQ has no
-- function for the archive tables, so this is the one place sluice deletes from them directly.
CREATE OR REPLACE FUNCTION sluice.delete_archived_messages(queue_names text[], message_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_queue text;
begin
  for v_queue in select distinct q from unnest(queue_names) as q where q is not null loop
    continue when not exists (select 1 from pgmq.meta m where lower(m.queue_name) = v_queue);
    execute format('delete from pgmq.%I a where a.msg_id = any ($1)',
      pgmq.format_table_name(v_queue, 'a'))
    using array(
      select m.id from unnest(queue_names, message_ids) as m(q, id) where m.q = v_queue
    );
  end loop;
end;
$_$;
