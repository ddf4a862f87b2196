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
-- Refuses to delete a flow that a foreign alias points at: the alias would silently fall back to
-- whatever else has its name. Unless `force` (a development recompile, `flows reset --force`), also
-- refuses a flow with active runs (they would vanish without a word) or with live workers (they
-- would loop on a dropped queue), naming the count and the workers. Security definer: it drops
-- queues (sluice.drop_queue; see 20261130001500_sluice_privileges.sql).
create function sluice.delete_flow_and_data(flow_slug text, force boolean default false)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_queues text[];
  v_ids bigint[];
  v_queue text;
  v_aliases text;
  v_active bigint;
  v_workers text;
begin
  if not exists (select 1 from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug)
  then
    raise exception 'Cannot delete flow "%": no such flow', delete_flow_and_data.flow_slug
      using errcode = 'no_data_found';
  end if;
  perform pg_advisory_xact_lock(
    hashtextextended('sluice.flow:' || lower(delete_flow_and_data.flow_slug), 0));

  select string_agg(format('"%s"', a.alias), ', ' order by a.alias) into v_aliases
  from sluice.aliases a
  where a.flow_slug = delete_flow_and_data.flow_slug and a.alias <> a.flow_slug;
  if v_aliases is not null then
    raise exception 'Cannot delete flow "%": alias % points at it; activate the alias on another flow first',
      delete_flow_and_data.flow_slug, v_aliases
      using errcode = 'dependent_objects_still_exist';
  end if;

  if not coalesce(delete_flow_and_data.force, false) then
    select count(*) into v_active
    from sluice.runs r
    where r.flow_slug = delete_flow_and_data.flow_slug and r.status = 'started';
    if v_active > 0 then
      raise exception 'Cannot delete flow "%": % active run(s); let them finish or cancel them, or pass force',
        delete_flow_and_data.flow_slug, v_active
        using errcode = 'object_in_use';
    end if;
    select string_agg(format('%s (%s)', w.worker_id, w.function_name), ', ' order by w.worker_id::text)
    into v_workers
    from sluice.live_workers w
    where w.flow_slug = delete_flow_and_data.flow_slug and w.deprecated_at is null;
    if v_workers is not null then
      raise exception 'Cannot delete flow "%": live workers serve it: %; stop them first, or pass force',
        delete_flow_and_data.flow_slug, v_workers
        using errcode = 'object_in_use';
    end if;
  end if;

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
    perform sluice.drop_queue(delete_flow_and_data.flow_slug, v_queue);
  end loop;
end;
$$;

-- Deletes one batch of old runs: at most batch_size runs that finished (completed or failed)
-- before `cutoff`, oldest first, with their step states, tasks (by cascade) and archived messages.
-- Returns how many runs it deleted.
--
-- Lock order: the batch's run rows (for update skip locked: a run some other session holds is
-- left for the next batch) -> their step states and tasks (cascade) -> archived message rows.
-- A finished run has no queued or started task and no live message (run transitions' invariant),
-- so nothing here touches rows a claim or a completion works on.
create function sluice.prune_runs_batch(cutoff timestamptz, batch_size integer)
returns integer
language plpgsql
as $$
declare
  v_runs uuid[];
  v_queues text[];
  v_ids bigint[];
begin
  -- runs_finished_idx answers this in order, reading no more than the batch.
  select array_agg(b.run_id) into v_runs
  from (
    select r.run_id
    from sluice.runs r
    where r.status <> 'started' and coalesce(r.completed_at, r.failed_at) < prune_runs_batch.cutoff
    order by coalesce(r.completed_at, r.failed_at)
    limit prune_runs_batch.batch_size
    for update skip locked
  ) b;
  if v_runs is null then
    return 0;
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  where t.run_id = any (v_runs) and t.message_id is not null;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  delete from sluice.runs r where r.run_id = any (v_runs);
  return cardinality(v_runs);
end;
$$;

-- Deletes runs that finished (completed or failed) more than `retention` ago, with their step
-- states, tasks and archived messages, and workers that stopped that long ago.
--
-- A procedure, so that every batch of batch_size runs is its own transaction: each commits before
-- the next begins, so no transaction holds back vacuum, grows an unbounded array or writes the
-- whole prune's WAL at once, and claims and completions keep running throughout. It must be
-- CALLed outside an explicit transaction block (COMMIT is impossible inside one). `result`
-- returns {runs, workers}: the counts deleted.
create procedure sluice.prune_data_older_than(
  retention interval,
  batch_size integer default 1000,
  inout result jsonb default null
)
language plpgsql
as $$
declare
  v_cutoff timestamptz;
  v_runs bigint := 0;
  v_batch integer;
  v_workers integer;
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if batch_size is null or batch_size < 1 then
    raise exception 'Cannot prune: batch_size must be a positive integer, got %',
      coalesce(batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  -- Fixed once: now() moves with every batch's transaction.
  v_cutoff := now() - retention;

  loop
    v_batch := sluice.prune_runs_batch(v_cutoff, batch_size);
    v_runs := v_runs + v_batch;
    commit;
    exit when v_batch < batch_size;
  end loop;

  with pruned as (
    delete from sluice.workers w where w.stopped_at < v_cutoff returning 1
  )
  select count(*) into v_workers from pruned;

  result := jsonb_build_object('runs', v_runs, 'workers', v_workers);
end;
$$;
