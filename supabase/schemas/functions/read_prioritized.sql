-- sluice.read_prioritized, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Reads up to qty visible messages of the queue as pgmq.read does (the same rows' vt set to
-- clock_timestamp() + vt seconds, read_ct + 1, skipping rows other readers hold), but in priority
-- order: the messages of queued tasks of priority > 0 by (priority desc, msg_id), then those of
-- priority 0 (and messages of no queued task) by msg_id, then those of priority < 0 by
-- (priority desc, msg_id). With no queued task of priority <> 0 on the queue it is pgmq.read.
-- Cost with priorities queued: the first step reads every prioritized queued task of the queue
-- (the partial index) and sorts them; the second probes that index once per message it passes.
CREATE OR REPLACE FUNCTION sluice.read_prioritized(queue_name text, vt integer, qty integer) RETURNS SETOF pgmq.message_record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_queue text := lower(read_prioritized.queue_name);
  v_table text;
  v_ids bigint[];
  v_more bigint[];
begin
  if not exists (
    select 1 from sluice.step_tasks t
    where t.queue_name = v_queue and t.status = 'queued' and t.priority <> 0
  ) then
    return query select * from pgmq.read(read_prioritized.queue_name, read_prioritized.vt,
      read_prioritized.qty);
    return;
  end if;
  v_table := pgmq.format_table_name(read_prioritized.queue_name, 'q');
  -- Higher than the default first.
  execute format(
    'select coalesce(array_agg(x.msg_id), ''{}'') from (
       select m.msg_id from sluice.step_tasks t join pgmq.%I m on m.msg_id = t.message_id
       where t.queue_name = $1 and t.status = ''queued'' and t.priority > 0
         and m.vt <= clock_timestamp()
       order by t.priority desc, t.message_id
       limit $2
       for update of m skip locked) x',
    v_table
  ) into v_ids using v_queue, read_prioritized.qty;
  -- Then the default, in PGMQ's order: every visible message but a prioritized task's.
  if cardinality(v_ids) < read_prioritized.qty then
    execute format(
      'select coalesce(array_agg(x.msg_id), ''{}'') from (
         select m.msg_id from pgmq.%I m
         where m.vt <= clock_timestamp()
           and not exists (
             select 1 from sluice.step_tasks t
             where t.queue_name = $1 and t.message_id = m.msg_id and t.status = ''queued''
               and t.priority <> 0)
         order by m.msg_id
         limit $2
         for update skip locked) x',
      v_table
    ) into v_more using v_queue, read_prioritized.qty - cardinality(v_ids);
    v_ids := v_ids || v_more;
  end if;
  -- Then lower than the default.
  if cardinality(v_ids) < read_prioritized.qty then
    execute format(
      'select coalesce(array_agg(x.msg_id), ''{}'') from (
         select m.msg_id from sluice.step_tasks t join pgmq.%I m on m.msg_id = t.message_id
         where t.queue_name = $1 and t.status = ''queued'' and t.priority < 0
           and m.vt <= clock_timestamp()
         order by t.priority desc, t.message_id
         limit $2
         for update of m skip locked) x',
      v_table
    ) into v_more using v_queue, read_prioritized.qty - cardinality(v_ids);
    v_ids := v_ids || v_more;
  end if;
  return query execute format(
    'update pgmq.%I m
     set vt = clock_timestamp() + make_interval(secs => $2), read_ct = m.read_ct + 1
     where m.msg_id = any ($1)
     returning m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers',
    v_table
  ) using v_ids, read_prioritized.vt;
end;
$_$;
