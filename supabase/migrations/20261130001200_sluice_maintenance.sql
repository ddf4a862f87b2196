-- Deleting a flow and pruning old runs. Both reach messages only through each task's stored
-- queue_name: a flow's tasks may live on several queues, and a shared queue is never dropped.

-- Deletes the archived copies of messages: queue_names[i] holds message_ids[i]. PGMQ has no
-- function for the archive tables, so this is the one place sluice deletes from them directly.
create function sluice.delete_archived_messages(queue_names text[], message_ids bigint[])
returns void
language plpgsql
as $$
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
$$;

-- Removes a flow with all its runs, tasks and messages, its private queues and their registry
-- rows and its aliases. Shared queues stay; only this flow's messages are removed from them.
create function sluice.delete_flow_and_data(flow_slug text)
returns void
language plpgsql
as $$
declare
  v_queues text[];
  v_ids bigint[];
  v_queue text;
begin
  if not exists (select 1 from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug)
  then
    raise exception 'Cannot delete flow "%": no such flow', delete_flow_and_data.flow_slug
      using errcode = 'no_data_found';
  end if;
  perform pg_advisory_xact_lock(
    hashtextextended('sluice.flow:' || lower(delete_flow_and_data.flow_slug), 0));

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  join sluice.queues q on q.queue_name = t.queue_name and q.ownership = 'shared'
  where t.flow_slug = delete_flow_and_data.flow_slug and t.message_id is not null;
  -- Runs (with their step states and tasks) before messages: the global lock order.
  delete from sluice.runs r where r.flow_slug = delete_flow_and_data.flow_slug;
  for v_queue in select distinct q from unnest(v_queues) as q loop
    perform pgmq.delete(v_queue,
      array(select m.id from unnest(v_queues, v_ids) as m(q, id) where m.q = v_queue));
  end loop;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  select array_agg(q.queue_name) into v_queues
  from sluice.queues q
  where q.ownership = 'private' and q.owner_flow_slug = delete_flow_and_data.flow_slug;

  delete from sluice.aliases a where a.flow_slug = delete_flow_and_data.flow_slug;
  delete from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug;

  -- A queue an operator already dropped by hand is skipped: PGMQ 1.5.1's drop_queue raises for it.
  for v_queue in
    select q from unnest(v_queues) as q
    where exists (select 1 from pgmq.meta m where m.queue_name = q)
  loop
    perform pgmq.drop_queue(v_queue);
  end loop;
end;
$$;

-- Deletes runs that finished (completed or failed) more than `retention` ago, with their step
-- states, tasks and archived messages, and workers that stopped that long ago.
create function sluice.prune_data_older_than(retention interval)
returns jsonb
language plpgsql
as $$
declare
  v_queues text[];
  v_ids bigint[];
  v_runs integer;
  v_workers integer;
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.runs r
  join sluice.step_tasks t on t.run_id = r.run_id
  where r.status <> 'started'
    and coalesce(r.completed_at, r.failed_at) < now() - retention
    and t.message_id is not null;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  with pruned as (
    delete from sluice.runs r
    where r.status <> 'started' and coalesce(r.completed_at, r.failed_at) < now() - retention
    returning 1
  )
  select count(*) into v_runs from pruned;

  with pruned as (
    delete from sluice.workers w where w.stopped_at < now() - retention returning 1
  )
  select count(*) into v_workers from pruned;

  return jsonb_build_object('runs', v_runs, 'workers', v_workers);
end;
$$;
